//! The binaries' command lines: flags, each followed by at most one value, read in
//! order. One reader, so every binary words a missing or bad value the same way.

/// Command-line arguments, read flag by flag.
pub struct Flags(std::iter::Skip<std::env::Args>);

impl Flags {
    /// The process's arguments after the program's name.
    pub fn from_env() -> Self {
        Self(std::env::args().skip(1))
    }

    /// The next flag, if any.
    pub fn next_flag(&mut self) -> Option<String> {
        self.0.next()
    }

    /// The value that follows `flag`.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        self.0.next().ok_or_else(|| format!("{flag} needs a value"))
    }

    /// The whole number that follows `flag`.
    pub fn number(&mut self, flag: &str) -> Result<usize, String> {
        let text = self.value(flag)?;
        parse_number(flag, &text)
    }
}

/// `text` as the whole number `flag` takes.
pub fn parse_number(flag: &str, text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a whole number, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::parse_number;

    #[test]
    fn a_bad_number_names_its_flag_and_the_text() {
        assert_eq!(parse_number("--npcs", "12"), Ok(12));
        assert_eq!(
            parse_number("--npcs", "-3"),
            Err("--npcs needs a whole number, got \"-3\"".to_owned())
        );
    }
}

//! A server-sent-events reader that never holds more than one line and one event,
//! each within a limit, so a stream with an endless line cannot fill memory.
//!
//! It follows the WHATWG event-stream rules as far as an OpenAI-compatible stream
//! needs them: lines end in `\r\n`, `\n` or `\r`; `data:` lines (with or without a
//! space after the colon) add to the event; a blank line ends it; `:` starts a
//! comment. Other fields (`event`, `id`, `retry`) carry nothing these streams use.
//! An event the stream never ends with a blank line is dropped, as the rules say.

/// The line or event went over the limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooLong;

#[derive(Debug)]
pub(crate) struct SseReader {
    limit: usize,
    /// The line read so far, without its ending.
    line: Vec<u8>,
    /// The event's data so far, each line followed by `\n`.
    data: String,
    /// The last chunk ended in `\r`, so a `\n` that starts the next one ends nothing.
    after_cr: bool,
    first_line: bool,
}

impl SseReader {
    /// A reader whose lines, and whose events' data, are at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            data: String::new(),
            after_cr: false,
            first_line: true,
        }
    }

    /// Reads the next bytes of the stream and appends the data of every event they
    /// complete to `events`. Chunks may split the stream anywhere, even inside a
    /// character: lines are only decoded once whole.
    pub(crate) fn push(
        &mut self,
        mut bytes: &[u8],
        events: &mut Vec<String>,
    ) -> Result<(), TooLong> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.extend_line(&bytes[..end])?;
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.end_line(events)?;
        }
        self.extend_line(bytes)
    }

    fn extend_line(&mut self, part: &[u8]) -> Result<(), TooLong> {
        if self.line.len() + part.len() > self.limit {
            return Err(TooLong);
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<String>) -> Result<(), TooLong> {
        let mut line = &self.line[..];
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        // Invalid UTF-8 becomes U+FFFD, as the rules say; the JSON decides the rest.
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if !self.data.is_empty() {
                self.data.pop();
                events.push(std::mem::take(&mut self.data));
            }
        } else if !line.starts_with(':') {
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (&*line, ""),
            };
            if field == "data" {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(TooLong);
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
        }
        self.line.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(chunks: &[&[u8]], limit: usize) -> Result<Vec<String>, TooLong> {
        let mut reader = SseReader::new(limit);
        let mut events = Vec::new();
        for chunk in chunks {
            reader.push(chunk, &mut events)?;
        }
        Ok(events)
    }

    fn read(stream: &str) -> Vec<String> {
        read_all(&[stream.as_bytes()], 1 << 20).unwrap()
    }

    #[test]
    fn data_lines_with_and_without_a_space_comments_and_done() {
        let stream = ": keep-alive\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\n\nevent: x\nid: 7\nretry: 10\ndata:  two spaces\n\ndata: [DONE]\n\n";
        assert_eq!(
            read(stream),
            ["{\"a\":1}", "{\"b\":2}", " two spaces", "[DONE]"]
        );
    }

    #[test]
    fn every_line_ending_and_multi_line_data() {
        assert_eq!(
            read("data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\rdata: e\ndata\n\n"),
            ["a\nb", "c\nd", "e\n"]
        );
    }

    #[test]
    fn a_crlf_split_between_chunks_ends_one_line() {
        let events = read_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], 64).unwrap();
        assert_eq!(events, ["a\nb"]);
    }

    #[test]
    fn events_without_data_and_an_unfinished_event_are_dropped() {
        assert_eq!(
            read("id: 1\n\n: only a comment\n\ndata: cut"),
            Vec::<String>::new()
        );
        assert_eq!(read("data:\n\n"), [""]);
    }

    #[test]
    fn a_byte_order_mark_starts_the_first_line_only() {
        assert_eq!(
            read("\u{feff}data: a\n\ndata: \u{feff}b\n\n"),
            ["a", "\u{feff}b"]
        );
    }

    #[test]
    fn a_line_over_the_limit_fails_before_it_ends() {
        assert_eq!(read_all(&[b"data: 12345"], 11), Ok(vec![]));
        assert_eq!(read_all(&[b"data: 123456"], 11), Err(TooLong));
        // Byte by byte, the reader still stops at the limit, not at the line's end.
        let mut reader = SseReader::new(11);
        let mut events = Vec::new();
        let fed = std::iter::repeat_n(b'A', 1_000)
            .take_while(|byte| reader.push(&[*byte], &mut events).is_ok())
            .count();
        assert_eq!(fed, 11);
    }

    #[test]
    fn data_over_the_limit_fails_even_in_short_lines() {
        let many = "data: 1234\n".repeat(3);
        assert_eq!(read_all(&[many.as_bytes()], 14), Err(TooLong));
        assert_eq!(read_all(&[many.as_bytes()], 15), Ok(vec![]));
        let ended = format!("{many}\n{many}\n");
        assert_eq!(
            read_all(&[ended.as_bytes()], 15),
            Ok(vec!["1234\n1234\n1234".to_owned(); 2]),
            "the limit is per event"
        );
    }

    #[derive(Clone, Debug)]
    enum Line {
        Data(String),
        NoSpaceData(String),
        Comment(String),
        Field(&'static str, String),
    }

    fn text() -> impl Strategy<Value = String> {
        // Any characters but line breaks, weighted towards multi-byte ones.
        prop_oneof![any::<String>(), "[a-zé😀ẞ我 :]{0,12}",]
            .prop_map(|text| text.replace(['\r', '\n'], ""))
    }

    fn line() -> impl Strategy<Value = Line> {
        prop_oneof![
            4 => text().prop_map(Line::Data),
            2 => text().prop_map(Line::NoSpaceData),
            1 => text().prop_map(Line::Comment),
            1 => (prop::sample::select(vec!["event", "id", "retry", "unknown"]), text())
                .prop_map(|(name, value)| Line::Field(name, value)),
        ]
    }

    /// A stream and the events it holds.
    fn stream() -> impl Strategy<Value = (Vec<u8>, Vec<String>)> {
        let ending = prop::sample::select(vec!["\n", "\r\n", "\r"]);
        (
            any::<bool>(),
            prop::collection::vec(
                (
                    prop::collection::vec((line(), ending.clone()), 0..5),
                    ending,
                ),
                0..8,
            ),
        )
            .prop_map(|(bom, events)| {
                let mut stream = if bom {
                    "\u{feff}".to_owned()
                } else {
                    String::new()
                };
                let mut expected = Vec::new();
                for (lines, blank) in events {
                    let mut data: Option<String> = None;
                    for (line, ending) in lines {
                        let value = match line {
                            Line::Data(value) => {
                                stream.push_str(&format!("data: {value}"));
                                Some(value)
                            }
                            // Without the space, a value's own leading space would be eaten.
                            Line::NoSpaceData(value) if !value.starts_with(' ') => {
                                stream.push_str(&format!("data:{value}"));
                                Some(value)
                            }
                            Line::NoSpaceData(value) => {
                                stream.push_str(&format!("data: {value}"));
                                Some(value)
                            }
                            Line::Comment(text) => {
                                stream.push_str(&format!(":{text}"));
                                None
                            }
                            Line::Field(name, value) => {
                                stream.push_str(&format!("{name}: {value}"));
                                None
                            }
                        };
                        stream.push_str(ending);
                        if let Some(value) = value {
                            data = Some(match data {
                                Some(before) => format!("{before}\n{value}"),
                                None => value,
                            });
                        }
                    }
                    // A `\r` then a blank `\n` would read as one `\r\n`: end with a
                    // line ending that cannot merge.
                    stream.push_str(if stream.ends_with('\r') { "\r" } else { blank });
                    expected.extend(data);
                }
                (stream.into_bytes(), expected)
            })
    }

    proptest! {
        #[test]
        fn chunks_split_anywhere_give_the_same_events(
            (stream, expected) in stream(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(stream.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for cut in cuts {
                chunks.push(&stream[start..cut]);
                start = cut;
            }
            chunks.push(&stream[start..]);
            prop_assert_eq!(&read_all(&chunks, 1 << 20).unwrap(), &expected);
            prop_assert_eq!(&read_all(&[&stream], 1 << 20).unwrap(), &expected);
        }
    }
}

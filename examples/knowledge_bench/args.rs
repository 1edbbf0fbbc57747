//! The command line.

use std::path::PathBuf;

pub(crate) struct Args {
    pub(crate) data: PathBuf,
    pub(crate) budgets: Vec<usize>,
    pub(crate) json: bool,
    pub(crate) dump: Option<PathBuf>,
}

pub(crate) const USAGE: &str =
    "usage: knowledge_bench --data FILE --budget N[,N...] [--json] [--dump-prompts DIR]";

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut data = None;
    let mut budgets = Vec::new();
    let mut json = false;
    let mut dump = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--data" => data = Some(PathBuf::from(value("--data")?)),
            "--budget" => {
                for part in value("--budget")?.split(',') {
                    let budget: usize = part
                        .trim()
                        .parse()
                        .map_err(|_| format!("--budget: {part:?} is not a number of tokens"))?;
                    if budget == 0 {
                        return Err("--budget: a budget must be above 0".into());
                    }
                    budgets.push(budget);
                }
            }
            "--json" => json = true,
            "--dump-prompts" => dump = Some(PathBuf::from(value("--dump-prompts")?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let data = data.ok_or("--data FILE is required")?;
    if budgets.is_empty() {
        return Err("--budget N is required".into());
    }
    Ok(Args {
        data,
        budgets,
        json,
        dump,
    })
}

//! The command line.

use crate::harness::Executor;
use crate::{DEFAULT_NPCS, LOAD_MESSAGES, LOAD_NPCS};

pub(crate) struct Args {
    pub(crate) json: bool,
    pub(crate) npcs: usize,
    pub(crate) executors: Vec<Executor>,
    pub(crate) sets: bool,
    pub(crate) load_only: bool,
    pub(crate) load_npcs: usize,
    pub(crate) load_messages: usize,
}

pub(crate) fn parse_args() -> Args {
    let usage = "usage: frame_bench [--json] [--npcs N] [--executor multi|single|both] [--sets] [--scenario all|load] [--load-npcs N] [--load-messages N]";
    let fail = |why: &str| -> ! {
        eprintln!("{why}\n{usage}");
        std::process::exit(2);
    };
    let mut args = Args {
        json: false,
        npcs: DEFAULT_NPCS,
        executors: vec![Executor::Multi, Executor::Single],
        sets: false,
        load_only: false,
        load_npcs: LOAD_NPCS,
        load_messages: LOAD_MESSAGES,
    };
    let positive = |value: Option<String>, what: &str| -> usize {
        value
            .and_then(|n| n.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or_else(|| fail(&format!("{what} needs a positive number")))
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--sets" => args.sets = true,
            "--npcs" => {
                args.npcs = iter
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .unwrap_or_else(|| fail("--npcs needs a positive number"));
            }
            "--executor" => {
                args.executors = match iter.next().as_deref() {
                    Some("multi") => vec![Executor::Multi],
                    Some("single") => vec![Executor::Single],
                    Some("both") => vec![Executor::Multi, Executor::Single],
                    _ => fail("--executor takes multi, single or both"),
                };
            }
            "--scenario" => {
                args.load_only = match iter.next().as_deref() {
                    Some("all") => false,
                    Some("load") => true,
                    _ => fail("--scenario takes all or load"),
                };
            }
            "--load-npcs" => args.load_npcs = positive(iter.next(), "--load-npcs"),
            "--load-messages" => args.load_messages = positive(iter.next(), "--load-messages"),
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
    }
    args
}

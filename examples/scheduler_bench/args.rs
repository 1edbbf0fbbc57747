//! The command line.

use crate::app::Mode;
use crate::thread::online_cpus;
use crate::{
    DEFAULT_CHATTER, DEFAULT_DELAY_SECS, DEFAULT_LIMIT, DEFAULT_NPCS, DEFAULT_SECONDS,
    PLAYER_QUIET_END,
};

pub(crate) struct Args {
    pub(crate) json: bool,
    pub(crate) npcs: usize,
    pub(crate) seconds: u64,
    pub(crate) limit: usize,
    pub(crate) chatter: f64,
    pub(crate) delay: u64,
    pub(crate) reply_reserve: Option<f32>,
    pub(crate) modes: Vec<Mode>,
    pub(crate) single_threaded: bool,
    pub(crate) control_first: bool,
    /// The CPU the frame thread runs on alone (`--frame-cpu`).
    pub(crate) frame_cpu: Option<usize>,
    pub(crate) control_reads_memory: bool,
    pub(crate) data: String,
}

pub(crate) fn parse_args() -> Args {
    let usage = "usage: scheduler_bench [--json] [--npcs N] [--seconds S] [--limit N] [--chatter LINES_PER_SEC] [--delay SECS] [--reply-reserve SHARE] [--modes unloaded,scheduled,unscheduled] [--executor multi|single] [--control first|last] [--control-work spin|memory] [--frame-cpu N] [--data PATH]";
    let fail = |why: &str| -> ! {
        eprintln!("{why}\n{usage}");
        std::process::exit(2);
    };
    let mut args = Args {
        json: false,
        npcs: DEFAULT_NPCS,
        seconds: DEFAULT_SECONDS,
        limit: DEFAULT_LIMIT,
        chatter: DEFAULT_CHATTER,
        delay: DEFAULT_DELAY_SECS,
        reply_reserve: None,
        modes: vec![Mode::Unloaded, Mode::Scheduled, Mode::Unscheduled],
        single_threaded: false,
        control_first: false,
        frame_cpu: None,
        control_reads_memory: false,
        data: "../shared/bench/locomo/locomo_dev.json".to_owned(),
    };
    let mut iter = std::env::args().skip(1);
    let number = |what: &str, iter: &mut dyn Iterator<Item = String>| -> f64 {
        iter.next()
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
            .unwrap_or_else(|| fail(&format!("{what} needs a number")))
    };
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--npcs" => args.npcs = number("--npcs", &mut iter) as usize,
            "--seconds" => args.seconds = number("--seconds", &mut iter) as u64,
            "--limit" => args.limit = number("--limit", &mut iter) as usize,
            "--chatter" => args.chatter = number("--chatter", &mut iter),
            "--delay" => args.delay = number("--delay", &mut iter) as u64,
            "--reply-reserve" => {
                args.reply_reserve = Some(number("--reply-reserve", &mut iter) as f32)
            }
            "--modes" => {
                let list = iter.next().unwrap_or_default();
                args.modes = list
                    .split(',')
                    .map(|name| match name {
                        "unloaded" => Mode::Unloaded,
                        "scheduled" => Mode::Scheduled,
                        "unscheduled" => Mode::Unscheduled,
                        _ => fail(&format!("unknown mode {name:?}")),
                    })
                    .collect();
            }
            "--executor" => {
                args.single_threaded = match iter.next().as_deref() {
                    Some("multi") => false,
                    Some("single") => true,
                    _ => fail("--executor takes multi or single"),
                }
            }
            "--control" => {
                args.control_first = match iter.next().as_deref() {
                    Some("first") => true,
                    Some("last") => false,
                    _ => fail("--control takes first or last"),
                }
            }
            "--control-work" => {
                args.control_reads_memory = match iter.next().as_deref() {
                    Some("memory") => true,
                    Some("spin") => false,
                    _ => fail("--control-work takes spin or memory"),
                }
            }
            "--frame-cpu" => args.frame_cpu = Some(number("--frame-cpu", &mut iter) as usize),
            "--data" => args.data = iter.next().unwrap_or_else(|| fail("--data needs a path")),
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
    }
    if args.npcs < 1 || args.limit < 1 || args.seconds <= PLAYER_QUIET_END.as_secs() {
        fail("--npcs and --limit must be at least 1, --seconds over 10");
    }
    let cpus = online_cpus();
    if args.frame_cpu.is_some_and(|cpu| cpu >= cpus || cpus < 2) {
        fail(&format!(
            "--frame-cpu takes a CPU below {cpus}, and needs two CPUs or more"
        ));
    }
    args
}

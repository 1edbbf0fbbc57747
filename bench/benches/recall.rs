//! Recall over a 10k-message log: indexing throughput and query latency, in
//! English and in Chinese, and in English with a calendar (`english-dated`: one
//! message an hour from 1 January 2022, an eighth of the lines and half the
//! queries holding a date expression).
//!
//! `cargo bench -p bevy_npc_memory_bench --bench recall`
//!
//! Before Criterion runs, the same binary times 2,000 queries one by one and prints
//! their p50 and p99 latency, and compares the index's heap with the log's own
//! memory.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_npc_memory::memory::{
    Calendar, ChatMessage, LogIndex, RecallConfig, RecallIndex, RecallQuery,
};
use bevy_npc_memory_bench::workload::{EnglishLines, Random, Zipf, chat};
use criterion::{Criterion, Throughput};

const WINDOW: usize = 20;
const CONTEXT: usize = 4;

/// 400 common Chinese characters, roughly most frequent first.
const CHINESE_CHARACTERS: &str = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持";

/// Lines of 15-45 characters drawn Zipf-wise from common characters, with
/// punctuation now and then. Independent draws give more distinct bigrams than
/// real Chinese, so the memory figure errs high.
struct ChineseLines {
    characters: Vec<char>,
    zipf: Zipf,
}

impl ChineseLines {
    fn new() -> Self {
        let characters: Vec<char> = CHINESE_CHARACTERS.chars().collect();
        let zipf = Zipf::new(characters.len());
        Self { characters, zipf }
    }

    fn line(&self, random: &mut Random, words: usize) -> String {
        let mut line = String::new();
        for i in 0..words * 3 / 2 {
            if i > 0 && random.below(10) == 0 {
                line.push('，');
            }
            line.push(self.characters[self.zipf.draw(random)]);
        }
        line.push('。');
        line
    }
}

/// Date expressions mixed into the dated workload's lines and queries.
const DATE_PHRASES: &[&str] = &[
    "yesterday",
    "last night",
    "last week",
    "two days ago",
    "last Friday",
    "on 3 March, 2022",
    "in May 2022",
    "When did",
    "on the 15th",
    "last month",
];

/// Unix seconds of 1 January 2022, where the dated workload's log starts.
const DATED_START: f64 = 1_640_995_200.0;

struct Workload {
    name: &'static str,
    log: Vec<ChatMessage>,
    queries: Vec<String>,
    calendar: Option<Calendar>,
}

impl Workload {
    fn config(&self) -> RecallConfig {
        RecallConfig {
            calendar: self.calendar,
            ..RecallConfig::enabled()
        }
    }

    fn index(&self) -> RecallIndex {
        RecallIndex::with_calendar(self.calendar)
    }
}

/// The English workload with dates: one message an hour, an eighth of the lines
/// and half the queries with a date expression.
fn dated(english: &Workload) -> Workload {
    let mut random = Random(0xda7e);
    let mut log = english.log.clone();
    for message in &mut log {
        message.timestamp = DATED_START + message.index as f64 * 3_600.0;
        if random.below(8) == 0 {
            let phrase = DATE_PHRASES[random.below(DATE_PHRASES.len())];
            message.content = Arc::from(format!("{phrase} {}", message.content));
        }
    }
    let queries = english
        .queries
        .iter()
        .map(|query| match random.below(2) {
            0 => format!("{} {query}", DATE_PHRASES[random.below(DATE_PHRASES.len())]),
            _ => query.clone(),
        })
        .collect();
    Workload {
        name: "english-dated",
        log,
        queries,
        calendar: Some(Calendar::UNIX),
    }
}

fn workload(name: &'static str, line: impl FnMut(&mut Random, usize) -> String) -> Workload {
    let (log, queries) = chat(line);
    Workload {
        name,
        log,
        queries,
        calendar: None,
    }
}

fn workloads() -> Vec<Workload> {
    let mut random = Random(0xfeed);
    let english = EnglishLines::new(&mut random);
    let chinese = ChineseLines::new();
    let english = workload("english", |random, words| english.line(random, words));
    let english_dated = dated(&english);
    vec![
        english,
        workload("chinese", |random, words| chinese.line(random, words)),
        english_dated,
    ]
}

/// A query as the plugin would make it: the new line, the last few messages as
/// context, the window excluded.
fn run_query(
    index: &mut RecallIndex,
    workload: &Workload,
    line: &str,
    config: &RecallConfig,
) -> usize {
    let end = workload.log.len();
    let context: Vec<&str> = workload.log[end - CONTEXT..]
        .iter()
        .map(|message| &*message.content)
        .collect();
    let query = RecallQuery {
        line,
        context: &context,
        exclude: (end - WINDOW) as LogIndex..end as LogIndex,
        line_index: None,
        now: workload.log[end - 1].timestamp + 5.0,
        own_name: "",
    };
    index.query(&query, &workload.log, config).len()
}

fn log_bytes(log: &[ChatMessage]) -> usize {
    log.iter()
        .map(|message| message.content.len() + size_of::<ChatMessage>())
        .sum()
}

fn report_latency_and_memory(workload: &Workload) {
    let config = workload.config();
    let started = Instant::now();
    let mut index = workload.index();
    for message in &workload.log {
        index.add(message);
    }
    let build = started.elapsed();
    let incremental_bytes = index.memory_bytes();
    let rebuilt_bytes =
        RecallIndex::from_log_with_calendar(&workload.log, workload.calendar).memory_bytes();

    // The machine may be shared: besides each query's first timing, the best of
    // three runs of the same query filters out time stolen by other processes.
    let mut first: Vec<Duration> = Vec::with_capacity(workload.queries.len());
    let mut best: Vec<Duration> = Vec::with_capacity(workload.queries.len());
    for line in &workload.queries {
        let timings = [(); 3].map(|()| {
            let started = Instant::now();
            black_box(run_query(&mut index, workload, line, &config));
            started.elapsed()
        });
        first.push(timings[0]);
        best.push(timings.into_iter().min().unwrap());
    }
    first.sort_unstable();
    best.sort_unstable();
    let micros = |latencies: &[Duration], p: f64| {
        let at = ((latencies.len() - 1) as f64 * p).round() as usize;
        latencies[at].as_secs_f64() * 1e6
    };
    let log = log_bytes(&workload.log);
    let after_queries = index.memory_bytes();
    println!(
        "recall/{}: {} messages, {} terms; add {:.2} µs/message ({:.0} messages/s)",
        workload.name,
        workload.log.len(),
        index.term_count(),
        build.as_secs_f64() * 1e6 / workload.log.len() as f64,
        workload.log.len() as f64 / build.as_secs_f64(),
    );
    println!(
        "recall/{}: {} queries: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs \
         (best of 3 per query: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs)",
        workload.name,
        first.len(),
        micros(&first, 0.50),
        micros(&first, 0.99),
        micros(&first, 1.0),
        micros(&best, 0.50),
        micros(&best, 0.99),
        micros(&best, 1.0),
    );
    println!(
        "recall/{}: log {} B; index {} B after adds ({:.2}x), {} B rebuilt ({:.2}x),          {} B after queries ({:.2}x)",
        workload.name,
        log,
        incremental_bytes,
        incremental_bytes as f64 / log as f64,
        rebuilt_bytes,
        rebuilt_bytes as f64 / log as f64,
        after_queries,
        after_queries as f64 / log as f64,
    );
}

fn criterion_benches(c: &mut Criterion, workloads: &[Workload]) {
    for workload in workloads {
        let config = workload.config();
        let mut group = c.benchmark_group(format!("recall/{}", workload.name));
        group.throughput(Throughput::Elements(workload.log.len() as u64));
        group.sample_size(10);
        group.bench_function("add_10k", |b| {
            b.iter(|| {
                let mut index = workload.index();
                for message in &workload.log {
                    index.add(message);
                }
                black_box(index.len())
            })
        });
        group.throughput(Throughput::Elements(1));
        group.sample_size(50);
        let mut index = RecallIndex::from_log_with_calendar(&workload.log, workload.calendar);
        let mut next = 0;
        group.bench_function("query_10k", |b| {
            b.iter(|| {
                next = (next + 1) % workload.queries.len();
                black_box(run_query(
                    &mut index,
                    workload,
                    &workload.queries[next],
                    &config,
                ))
            })
        });
        group.finish();
    }
}

fn main() {
    let workloads = workloads();
    for workload in &workloads {
        report_latency_and_memory(workload);
    }
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion_benches(&mut criterion, &workloads);
    criterion.final_summary();
}

//! Micro-benchmarks of the memory core: the per-message bookkeeping must not grow
//! with the length of the log.
//!
//! `cargo bench -p bevy_npc_memory_bench --bench core`

use std::hint::black_box;
use std::time::Duration;

use bevy_npc_memory::memory::{
    MemoryConfig, NpcMemory, PersonaPrompt, Role, SummaryOutcome, SummaryStyle, estimate_tokens,
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn memory_with_log(window: usize, messages: usize) -> NpcMemory {
    let persona = PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7, the bunker's security AI.".into(),
        style: SummaryStyle::english(),
    };
    let mut memory = NpcMemory::new(persona, &MemoryConfig::with_window(window));
    let mut layers = memory.layers();
    for i in 0..messages {
        let role = if i.is_multiple_of(2) {
            Role::User
        } else {
            Role::Assistant
        };
        layers.record(
            role,
            format!("message number {i} about the power system"),
            i as f64,
        );
        summarize_if_due(&mut layers);
    }
    memory
}

fn summarize_if_due(layers: &mut bevy_npc_memory::memory::LayersMut<'_>) {
    if let Some(job) = layers.start_summary() {
        let outcome = layers.finish_summary(job.id, Ok("The player is Alex."), Duration::ZERO);
        debug_assert!(matches!(outcome, SummaryOutcome::Updated(_)));
    }
}

fn per_message(c: &mut Criterion) {
    let mut group = c.benchmark_group("record_trim_summarize");
    for (window, log_len) in [(20, 1_000), (20, 100_000), (200, 1_000), (200, 100_000)] {
        let mut memory = memory_with_log(window, log_len);
        let id = BenchmarkId::new(format!("window{window}"), log_len);
        group.bench_with_input(id, &log_len, |b, _| {
            let mut layers = memory.layers();
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                let role = if i.is_multiple_of(2) {
                    Role::User
                } else {
                    Role::Assistant
                };
                black_box(layers.record(role, "I'm in the storage area now.", i as f64));
                summarize_if_due(&mut layers);
            });
        });
    }
    group.finish();
}

fn prompt_assembly(c: &mut Criterion) {
    let mut group = c.benchmark_group("reply_prompt");
    for window in [20, 200] {
        for log_len in [1_000, 100_000] {
            let mut memory = memory_with_log(window, log_len);
            let mut layers = memory.layers();
            group.bench_function(format!("window{window}_log{log_len}"), |b| {
                b.iter(|| black_box(layers.reply_prompt()));
            });
        }
    }
    group.finish();
}

/// Starting and finishing one summary (the bookkeeping, not the model's work).
fn summary_bookkeeping(c: &mut Criterion) {
    let mut group = c.benchmark_group("summary_bookkeeping");
    for log_len in [1_000, 100_000] {
        let mut memory = memory_with_log(20, log_len);
        group.bench_with_input(BenchmarkId::from_parameter(log_len), &log_len, |b, _| {
            let mut layers = memory.layers();
            b.iter(|| {
                layers.record(Role::User, "one more line", 0.0);
                layers.request_summary();
                let job = layers.start_summary().expect("a manual summary is due");
                black_box(layers.finish_summary(job.id, Ok("The player is Alex."), Duration::ZERO))
            });
        });
    }
    group.finish();
}

fn token_estimate(c: &mut Criterion) {
    let english = "From the storage area, turn right into the maintenance corridor and take the second fork left.";
    let chinese = "从仓储区出门右转进入维护走廊，沿主干道前进到第二个分岔口左转即可到配电室。";
    c.bench_function("estimate_tokens/english", |b| {
        b.iter(|| estimate_tokens(black_box(english)))
    });
    c.bench_function("estimate_tokens/chinese", |b| {
        b.iter(|| estimate_tokens(black_box(chinese)))
    });
}

criterion_group!(
    benches,
    per_message,
    prompt_assembly,
    summary_bookkeeping,
    token_estimate
);
criterion_main!(benches);

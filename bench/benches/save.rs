//! Savegame costs at 100 NPCs × 1,000 messages (about 10 MB of JSON): what autosave
//! costs the main thread, and write/load throughput against plain serde_json on
//! the same data, side by side.
//!
//! Then autosave with one NPC changed, the journal against a full rewrite: bytes
//! written and time per autosave (printed side by side, measured in the same run),
//! and the load time of a journaled slot against a compacted one (criterion).
//!
//! `cargo bench -p bevy_npc_memory_bench --bench save`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_npc_memory::memory::{
    MemoryConfig, MemoryParts, NpcId, NpcMemory, PersonaPrompt, Role, SummaryStyle,
};
use bevy_npc_memory::saves::{JournaledSlot, NpcSave, SaveGame, journal_path};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const NPCS: usize = 100;
const MESSAGES: usize = 1000;

fn npc(i: usize) -> NpcMemory {
    let persona = PersonaPrompt {
        name: format!("NPC {i}"),
        text: "You guard the bunker.".into(),
        style: SummaryStyle::english(),
    };
    let mut memory = NpcMemory::new(persona, &MemoryConfig::with_window(20));
    let mut layers = memory.layers();
    for m in 0..MESSAGES {
        let role = if m % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        layers.record(
            role,
            format!("message {m} of npc {i}: the breaker in the switch room needs a look"),
            m as f64,
        );
        if let Some(job) = layers.start_summary() {
            layers.finish_summary(
                job.id,
                Ok("The player is Alex, fixing the power."),
                Duration::from_millis(120),
            );
        }
    }
    memory
}

/// One NPC's entry in a save: what the plugin's snapshot makes for a changed NPC.
fn npc_save(i: usize, memory: &NpcMemory) -> Arc<NpcSave> {
    Arc::new(NpcSave::new(
        NpcId::new(format!("npc{i:03}")),
        MemoryParts::of(&memory.log, &memory.window, &memory.context),
    ))
}

fn bench(c: &mut Criterion) {
    let memories: Vec<NpcMemory> = (0..NPCS).map(npc).collect();
    let saves: Vec<Arc<NpcSave>> = memories
        .iter()
        .enumerate()
        .map(|(i, m)| npc_save(i, m))
        .collect();
    let save = SaveGame::new(saves.clone());
    let bytes = serde_json::to_vec(&save).unwrap();
    println!("save size: {} bytes", bytes.len());

    // What an autosave request costs the frame: take apart the NPC that changed and
    // share the other 99 with the previous snapshot (the plugin's `snapshot`).
    let mut group = c.benchmark_group("autosave_main_thread");
    group.bench_function("one_changed_npc_of_100", |b| {
        b.iter(|| {
            let mut npcs = saves.clone();
            npcs[7] = npc_save(7, &memories[7]);
            black_box(SaveGame::new(npcs))
        });
    });
    group.bench_function("all_100_changed", |b| {
        b.iter(|| {
            let npcs = memories
                .iter()
                .enumerate()
                .map(|(i, m)| npc_save(i, m))
                .collect();
            black_box(SaveGame::new(npcs))
        });
    });
    group.finish();

    let dir = std::env::temp_dir().join(format!("npc-save-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("savegame.json");

    let mut group = c.benchmark_group("write");
    group
        .throughput(Throughput::Bytes(bytes.len() as u64))
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("plain_serde_json_to_vec", |b| {
        b.iter(|| black_box(serde_json::to_vec(&save).unwrap()))
    });
    group.bench_function("savegame_write_to_file_fsync", |b| {
        b.iter(|| black_box(save.write_to(&path, u64::MAX).unwrap()))
    });
    group.finish();

    save.write_to(&path, u64::MAX).unwrap();
    let mut group = c.benchmark_group("load");
    group
        .throughput(Throughput::Bytes(bytes.len() as u64))
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("plain_serde_json_from_slice", |b| {
        b.iter(|| black_box(serde_json::from_slice::<SaveGame>(&bytes).unwrap()))
    });
    group.bench_function("savegame_read_from_file_checked", |b| {
        b.iter(|| black_box(SaveGame::read_from(&path, u64::MAX).unwrap()))
    });
    group.finish();
    std::fs::remove_dir_all(dir).ok();
}

/// One autosave after one line arrives for NPC 7: its memory takes the line and
/// the snapshot shares the other 99 NPCs with the previous one.
fn one_line(memories: &mut [NpcMemory], npcs: &mut [Arc<NpcSave>], n: usize) -> Arc<SaveGame> {
    let stamp = (MESSAGES + n) as f64;
    memories[7].layers().record(
        Role::User,
        format!("line {n} for npc 7: is the breaker in the switch room fixed yet?"),
        stamp,
    );
    npcs[7] = npc_save(7, &memories[7]);
    Arc::new(SaveGame::new(npcs.to_vec()).with_clock(stamp))
}

struct Run {
    writes: usize,
    bytes: u64,
    time: Duration,
    slowest: Duration,
    whole: usize,
}

fn report(name: &str, run: &Run) {
    println!(
        "{name:<28} {:>6} autosaves  {:>12.0} bytes/autosave  {:>9.3} ms/autosave  slowest {:>8.3} ms  whole snapshots {}",
        run.writes,
        run.bytes as f64 / run.writes as f64,
        run.time.as_secs_f64() * 1e3 / run.writes as f64,
        run.slowest.as_secs_f64() * 1e3,
        run.whole,
    );
}

/// Autosave with one NPC changed at 100 NPCs × 1,000 messages: today's full
/// rewrite (`SaveGame::write_to`) against the journal (`JournaledSlot`, what the
/// plugin's autosave uses), each from the same memory, in the same run. The journal
/// run is long enough to pass its compaction threshold, so its mean includes the
/// whole snapshots it writes.
fn autosave_journal_vs_full(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("npc-journal-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let full_path = dir.join("full.json");
    let journal_file = dir.join("journaled.json");
    let mut memories: Vec<NpcMemory> = (0..NPCS).map(npc).collect();
    let mut npcs: Vec<Arc<NpcSave>> = memories
        .iter()
        .enumerate()
        .map(|(i, m)| npc_save(i, m))
        .collect();
    let first = Arc::new(SaveGame::new(npcs.clone()));
    first.write_to(&full_path, u64::MAX).unwrap();
    let slot = JournaledSlot::new(&journal_file, u64::MAX);
    let snapshot = slot.write(&first).unwrap();

    let mut full = Run {
        writes: 0,
        bytes: 0,
        time: Duration::ZERO,
        slowest: Duration::ZERO,
        whole: 0,
    };
    let mut journal = Run {
        writes: 0,
        bytes: 0,
        time: Duration::ZERO,
        slowest: Duration::ZERO,
        whole: 0,
    };
    let mut appends = Run {
        writes: 0,
        bytes: 0,
        time: Duration::ZERO,
        slowest: Duration::ZERO,
        whole: 0,
    };
    let mut n = 0;
    // Interleaved, so both see the same memory and the same disk.
    for round in 0..12_000 {
        let save = one_line(&mut memories, &mut npcs, n);
        n += 1;
        let started = Instant::now();
        let bytes = slot.write(&save).unwrap();
        let took = started.elapsed();
        journal.writes += 1;
        journal.bytes += bytes as u64;
        journal.time += took;
        journal.slowest = journal.slowest.max(took);
        if bytes >= snapshot {
            journal.whole += 1;
        } else {
            appends.writes += 1;
            appends.bytes += bytes as u64;
            appends.time += took;
            appends.slowest = appends.slowest.max(took);
        }
        if round % 400 == 0 {
            let started = Instant::now();
            let bytes = save.write_to(&full_path, u64::MAX).unwrap();
            let took = started.elapsed();
            full.writes += 1;
            full.bytes += bytes as u64;
            full.time += took;
            full.slowest = full.slowest.max(took);
            full.whole += 1;
        }
    }
    println!(
        "autosave, one NPC changed, {NPCS} NPCs × {MESSAGES} messages (snapshot {snapshot} bytes):"
    );
    report("full rewrite (today)", &full);
    report("journal, appends only", &appends);
    report("journal, with compactions", &journal);

    // Load: the journaled slot at its largest, its journal just short of the
    // compaction threshold (a quarter of the snapshot), against the same memory
    // compacted into one snapshot.
    let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
    while size(&journal_path(&journal_file)) < size(&journal_file) / 4 * 9 / 10 {
        let save = one_line(&mut memories, &mut npcs, n);
        n += 1;
        slot.write(&save).unwrap();
    }
    let journal_bytes = std::fs::metadata(journal_path(&journal_file)).map_or(0, |m| m.len());
    let (_, journaled) = SaveGame::read_from(&journal_file, u64::MAX).unwrap();
    let compacted_file = dir.join("compacted.json");
    journaled.write_to(&compacted_file, u64::MAX).unwrap();
    println!(
        "load: journaled slot = snapshot {} bytes + journal {journal_bytes} bytes; compacted = {} bytes",
        std::fs::metadata(&journal_file).unwrap().len(),
        std::fs::metadata(&compacted_file).unwrap().len()
    );
    let mut group = c.benchmark_group("load_journaled_vs_compacted");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("journaled_slot", |b| {
        b.iter(|| black_box(SaveGame::read_from(&journal_file, u64::MAX).unwrap()))
    });
    group.bench_function("compacted_slot", |b| {
        b.iter(|| black_box(SaveGame::read_from(&compacted_file, u64::MAX).unwrap()))
    });
    group.finish();
    std::fs::remove_dir_all(dir).ok();
}

criterion_group!(benches, bench, autosave_journal_vs_full);
criterion_main!(benches);

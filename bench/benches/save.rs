//! Savegame costs at 100 NPCs × 1,000 messages (about 10 MB of JSON): what autosave
//! costs the main thread, and write/load throughput against plain serde_json on
//! the same data, side by side.
//!
//! `cargo bench -p bevy_npc_memory_bench --bench save`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use bevy_npc_memory::memory::{
    MemoryConfig, MemoryParts, NpcId, NpcMemory, PersonaPrompt, Role, SummaryStyle,
};
use bevy_npc_memory::save::{NpcSave, SaveGame};
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

criterion_group!(benches, bench);
criterion_main!(benches);

//! Quitting mid-save or with lines waiting, saves the reader would refuse, and
//! the seed's Unity save imported.

use super::*;

#[test]
fn two_quick_saves_and_an_exit_leave_the_newest_complete_file_and_no_temp_files() {
    let dir = temp_dir("quick-saves");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.settle();
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    h.app.update();
    h.say("echo7", "second");
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    exit(&mut h);
    let saved = read_save(&path);
    // The reply to "second" may or may not have arrived in that frame.
    assert_eq!(
        saved.npcs[0].memory.log.get(2).map(|m| &*m.content),
        Some("second"),
        "the newest save won"
    );
    drop(h);
    assert_eq!(read_save(&path), saved, "no older write landed later");
    assert!(files_named(&dir, ".tmp").is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_save_the_reader_would_refuse_is_not_written() {
    let dir = temp_dir("oversized");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "short");
    h.settle();
    h.save_to(&path);
    let before = fs::read(&path).unwrap();
    h.app
        .world_mut()
        .resource_mut::<SaveSettings>()
        .max_file_bytes = before.len() as u64 + 64;
    h.say("echo7", &"long ".repeat(100));
    h.settle();
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    h.wait_for::<MemorySaveFailed>(1);
    let failure = h.inbox::<MemorySaveFailed>()[0].clone();
    assert_eq!(failure.path, path);
    let SaveError::TooLarge { bytes, max } = failure.error else {
        panic!("{:?}", failure.error)
    };
    assert!(bytes > max && max == before.len() as u64 + 64);
    assert!(failure.to_string().contains("over the limit"), "{failure}");
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the previous file is untouched"
    );
    assert!(!backup_path(&path).exists());
    assert!(files_named(&dir, ".tmp").is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn the_seeds_unity_save_is_imported_into_one_npc() {
    // The seed's example file, comments and all.
    let unity = r#"{
    "keys": [
        "ChatSystem", 
        "ContextMemory"
    ],
    "values": [
        // L2: 完整的对话流水账
        "{\"logs\":[{\"role\":\"user\",\"content\":\"你好，我是Alex。现在要去修复供电系统。\"}, {\"role\":\"assistant\",\"content\":\"已记录。建议先前往配电室检查主断路器；如提供所在区域可给出更短路线。\"}]}", 
        
        // L3: 提炼后的语义总结
        "{\"summary\":\"玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。\",\"counter\":2}"
    ]
}"#;
    let dir = temp_dir("unity");
    let path = dir.join("savegame.json");
    fs::write(&path, unity).unwrap();
    let mut h = Harness::new(seed_sized(ScriptedBackend::new()));
    h.spawn_from_file("echo7", "npcs/echo7.zh.npc.ron");
    h.app
        .world_mut()
        .write_message(bevy_npc_memory::saves::ImportUnitySave::new(
            path.clone(),
            NpcId::new("echo7"),
        ));
    h.wait_for::<MemoryLoaded>(1);
    assert_eq!(
        h.log("echo7"),
        [
            (
                Role::User,
                "你好，我是Alex。现在要去修复供电系统。".to_owned()
            ),
            (
                Role::Assistant,
                "已记录。建议先前往配电室检查主断路器；如提供所在区域可给出更短路线。".to_owned()
            ),
        ]
    );
    assert_eq!(
        h.summary("echo7"),
        "玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。"
    );
    // counter 2 = both messages arrived after that summary, so both stay uncovered
    // and in the window, and the system prompt carries the summary.
    let window = h.window("echo7");
    assert_eq!(window.len(), 3);
    assert!(
        window[0]
            .content
            .starts_with("你是地堡安保与引导 AI（ECHO-7）")
    );
    assert!(window[0].content.ends_with("[前情提要]: 玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn lines_waiting_when_the_game_quits_are_answered_after_the_next_start() {
    let dir = temp_dir("queued-on-quit");
    let slot = dir.join("savegame.json");
    let busy = ScriptedBackend::new();
    busy.push(Purpose::Reply, bevy_npc_memory::backends::ScriptStep::Hang);
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(busy)
            .with_autosave(&slot),
    );
    h.spawn("echo7", persona("ECHO-7"));
    for line in ["first", "second", "third"] {
        h.say("echo7", line);
    }
    h.app.update();
    assert_eq!(
        h.app
            .world()
            .resource::<NpcRequests>()
            .queued_lines(&NpcId::new("echo7"))
            .collect::<Vec<_>>(),
        ["second", "third"]
    );
    // The player quits while ECHO-7 is still thinking about the first line.
    h.app.world_mut().write_message(AppExit::Success);
    h.app.update();
    drop(h);
    let saved = read_save(&slot);
    assert_eq!(saved.npcs[0].queued, ["second", "third"]);
    assert_eq!(
        saved.npcs[0].memory.log.len(),
        1,
        "the line in flight is in L2"
    );

    let backend = ScriptedBackend::new();
    backend
        .push_reply("About the second line.")
        .push_reply("About the third line.");
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_autosave(&slot),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for_replies(2);
    assert_eq!(
        h.log("echo7"),
        [
            (Role::User, "first".to_owned()),
            (Role::User, "second".to_owned()),
            (Role::Assistant, "About the second line.".to_owned()),
            (Role::User, "third".to_owned()),
            (Role::Assistant, "About the third line.".to_owned()),
        ]
    );
    // Nothing waits any more, and the next autosave says so.
    h.settle();
    wait_for_saved_logs(&mut h, &slot, 5);
    assert!(read_save(&slot).npcs[0].queued.is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn restored_lines_are_held_to_the_rules_of_new_ones() {
    let dir = temp_dir("queued-unfit");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "hello");
    h.wait_for_replies(1);
    h.save_to(&path);
    let mut save = read_save(&path);
    let npc = std::sync::Arc::make_mut(&mut save.npcs[0]);
    npc.queued = vec!["   ".into(), "x".repeat(10_000), "still fine".into()];
    fs::write(
        &path,
        save.to_bytes(bevy_npc_memory::saves::SaveFormat::Json)
            .unwrap(),
    )
    .unwrap();

    h.load_from(&path);
    h.wait_for_replies(2);
    let handed_back: Vec<_> = h
        .inbox::<NpcReplyFailed>()
        .iter()
        .map(|f| (f.error.clone(), f.unrecorded_line.clone().unwrap().len()))
        .collect();
    assert_eq!(
        handed_back,
        [
            (ReplyError::EmptyLine, 3),
            (
                ReplyError::LineTooLong {
                    chars: 10_000,
                    max: 4_000
                },
                10_000
            ),
        ]
    );
    assert_eq!(h.log("echo7")[2], (Role::User, "still fine".to_owned()));
    fs::remove_dir_all(dir).ok();
}

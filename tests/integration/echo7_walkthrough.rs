//! The seed's acceptance scene, replayed exactly: ECHO-7 in the bunker, the player
//! Alex, window 4, threshold 2, through the plugin in a headless app.

use crate::support::{Harness, seed_sized};
use bevy_npc_memory::backends::ChatRequest;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::memory::{PromptMessage, SummaryStyle};
use bevy_npc_memory::prelude::*;

const PERSONA: &str = "你是地堡安保与引导 AI（ECHO-7）。语气专业简洁；优先给出可执行的下一步建议；不要编造不存在的系统状态。";

const USER_1: &str = "你好，我是 Alex。现在要去修复供电系统。";
const AI_2: &str =
    "已记录。建议先前往配电室，确认主断路器状态；如果你能提供当前所在区域，我可以给出更短路线。";
const SUMMARY_1: &str = "玩家名为 Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。";
const USER_3: &str = "我现在在仓储区。";
const AI_4: &str = "从仓储区出门右转进入维护走廊，沿主干道前进到第二个分岔口左转即可到配电室。到达后先确认主断路器与备用电源指示灯。";
const SUMMARY_2: &str = "玩家名为 Alex；当前目标是修复供电系统；玩家在仓储区，已获得经维护走廊前往配电室的路线；到达后应确认主断路器与备用电源指示灯。";
const SUMMARY_3: &str =
    "玩家名为 Alex；当前目标是修复供电系统；正前往配电室检查主断路器与备用电源指示灯。";
const USER_5: &str = "我叫什么？以及我现在要做什么？";
const AI_6: &str = "你是 Alex。你当前的目标是修复供电系统；我建议你前往配电室检查主断路器，并根据指示灯确认是否需要切换到备用电源。";

fn contents(messages: &[PromptMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_ref()).collect()
}

fn has_intro(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.content.as_ref() == USER_1)
}

#[test]
fn echo7_remembers_alex_after_the_introduction_leaves_the_window() {
    let backend = ScriptedBackend::new();
    backend
        .push_reply(AI_2)
        .push_summary(SUMMARY_1)
        .push_reply(AI_4)
        .push_summary(SUMMARY_2)
        .push_reply(AI_6)
        .push_summary(SUMMARY_3);
    let mut h = Harness::new(seed_sized(backend.clone()));
    h.spawn_from_file("echo7", "npcs/echo7.zh.npc.ron");
    let zh = SummaryStyle::chinese();

    // Stage 1: first contact. The exchange reaches the threshold, so exactly one
    // stateless summary request follows.
    h.say("echo7", USER_1);
    h.wait_for_replies(1);
    h.wait_for_summaries(1);
    let requests = backend.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].purpose(), Purpose::Reply);
    assert_eq!(contents(&requests[0].messages), [PERSONA, USER_1]);
    let summary_request = &requests[1];
    assert_eq!(summary_request.purpose(), Purpose::Summary);
    assert_eq!(
        summary_request.messages.len(),
        2,
        "instruction + transcript, nothing else"
    );
    assert_eq!(summary_request.messages[0].role, Role::System);
    assert_eq!(summary_request.messages[0].content.as_ref(), zh.instruction);
    let body = summary_request.messages[1].content.as_ref();
    assert_eq!(
        body,
        format!(
            "{}\n{}\n\n{}\n玩家: {USER_1}\nECHO-7: {AI_2}",
            zh.previous_heading, zh.no_previous, zh.transcript_heading
        )
    );
    assert!(
        summary_request
            .messages
            .iter()
            .all(|m| !m.content.contains(PERSONA)),
        "stateless: no persona"
    );

    // Stage 2: the summary is in the system prompt; the persona is untouched.
    h.say("echo7", USER_3);
    h.wait_for_replies(2);
    let third = &backend.requests()[2];
    assert_eq!(third.purpose(), Purpose::Reply);
    let expected_system = format!("{PERSONA}\n\n[前情提要]: {SUMMARY_1}");
    assert_eq!(third.messages[0].content.as_ref(), expected_system);
    assert_eq!(
        contents(&third.messages[1..]),
        [USER_1, AI_2, USER_3],
        "4 messages fit the window"
    );
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    assert_eq!(
        contexts
            .get(&NpcId::new("echo7"))
            .unwrap()
            .persona()
            .text
            .as_ref(),
        PERSONA
    );

    // Stage 3: the second exchange rolls the introduction out of the window (and its
    // covered reply with it, so the window starts with the player), but not out of L2.
    h.wait_for_summaries(2);
    let window = h.window("echo7");
    assert!(
        window.iter().all(|m| m.content.as_ref() != USER_1),
        "intro left L1"
    );
    assert_eq!(contents(&window[1..]), [USER_3, AI_4]);
    assert_eq!(h.log("echo7")[0].1, USER_1, "intro still in L2");
    let second_summary = &backend.requests()[3];
    assert_eq!(second_summary.purpose(), Purpose::Summary);
    assert!(
        second_summary.messages[1].content.contains(SUMMARY_1),
        "the previous summary is folded in"
    );
    assert!(
        !has_intro(second_summary),
        "only the unsummarized messages are sent"
    );

    // Stage 4: memory is tested. The request carries the summary with Alex and the
    // power system while the window no longer has the introduction.
    h.say("echo7", USER_5);
    h.wait_for_replies(3);
    h.wait_for_summaries(3);
    h.settle();
    let requests = backend.requests();
    let purposes: Vec<Purpose> = requests.iter().map(ChatRequest::purpose).collect();
    use Purpose::{Reply, Summary};
    assert_eq!(purposes, [Reply, Summary, Reply, Summary, Reply, Summary]);
    let last = &requests[4];
    assert_eq!(last.purpose(), Purpose::Reply);
    assert_eq!(
        last.messages[0].content.as_ref(),
        format!("{PERSONA}\n\n[前情提要]: {SUMMARY_2}")
    );
    assert!(
        last.messages[0].content.contains("Alex") && last.messages[0].content.contains("供电系统")
    );
    assert!(!has_intro(last), "the introduction is not in the window");
    assert_eq!(contents(&last.messages[1..]), [USER_3, AI_4, USER_5]);
    assert_eq!(h.replies("echo7").last().unwrap(), AI_6);

    // L2 holds all six messages, in order.
    let log = h.log("echo7");
    let expected = [
        (Role::User, USER_1),
        (Role::Assistant, AI_2),
        (Role::User, USER_3),
        (Role::Assistant, AI_4),
        (Role::User, USER_5),
        (Role::Assistant, AI_6),
    ];
    assert_eq!(log.len(), 6);
    for ((role, text), (want_role, want_text)) in log.iter().zip(expected) {
        assert_eq!((*role, text.as_str()), (want_role, want_text));
    }
    assert!(
        h.inbox::<NpcMemoryDegraded>().is_empty(),
        "nothing degraded"
    );
}

//! The HTTP backend's own overhead per request, side by side with a bare reqwest
//! call, both against the same loopback fake server giving a fixed reply.
//!
//! `cargo bench -p bevy_npc_memory_bench --features http --bench http_overhead`

// The fake server the HTTP integration tests use, shared rather than copied.
#[path = "../../tests/integration/support/fake_llm.rs"]
mod fake_llm;

use std::hint::black_box;

use bevy_npc_memory::backends::{
    ChatBackend, ChatRequest, OpenAiBackend, OpenAiConfig, Progress, RetryPolicy,
};
use criterion::{Criterion, criterion_group, criterion_main};
use fake_llm::{FakeLlm, FakeReply, completion, reply_request};

fn request() -> ChatRequest {
    reply_request(
        "You are ECHO-7, the bunker's security AI.",
        "I'm in the storage area now.",
    )
}

fn overhead(c: &mut Criterion) {
    let server = FakeLlm::start();
    server.set_fallback(FakeReply::ok(completion(
        "From the storage area, turn right into the maintenance corridor.",
    )));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut config = OpenAiConfig::custom("fake", server.base_url(), "fake-model");
    config.stream = false;
    config.retry = RetryPolicy::none();
    let backend = OpenAiBackend::new(config).unwrap();

    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let body = serde_json::json!({
        "model": "fake-model",
        "messages": request().messages,
        "stream": false,
        "max_tokens": 512,
        "temperature": 0.7,
    });

    let mut group = c.benchmark_group("http_request");
    group.bench_function("bare_reqwest", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let bytes = client
                    .post(&url)
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                let reply: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                black_box(
                    reply["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
        });
    });
    group.bench_function("openai_backend", |b| {
        b.iter(|| {
            runtime.block_on(async {
                black_box(
                    backend
                        .complete(request(), Progress::silent())
                        .await
                        .unwrap()
                        .content,
                )
            })
        });
    });
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);

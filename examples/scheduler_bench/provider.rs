//! The fake provider: an OpenAI-compatible server in this process that
//! rate-limits like a provider and counts the prompt tokens it receives.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy_npc_memory::memory::estimate_tokens;
use serde_json::{Value, json};

use crate::{SERVER_LATENCY, SUMMARY_MODEL};

/// What the server saw, by purpose.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Traffic {
    pub(crate) requests: u64,
    pub(crate) rate_limited: u64,
    pub(crate) tokens_sent: u64,
    pub(crate) tokens_accepted: u64,
}

impl Traffic {
    pub(crate) fn json(&self, seconds: f64) -> Value {
        let per_hour = |x: u64| (x as f64 * 3600.0 / seconds).round();
        json!({
            "requests": self.requests,
            "rate_limited_429": self.rate_limited,
            "accepted": self.requests - self.rate_limited,
            "prompt_tokens_sent": self.tokens_sent,
            "prompt_tokens_accepted": self.tokens_accepted,
            "prompt_tokens_sent_per_hour": per_hour(self.tokens_sent),
            "prompt_tokens_accepted_per_hour": per_hour(self.tokens_accepted),
        })
    }
}

#[derive(Default)]
struct ServerState {
    /// When each accepted request of the last 60 s arrived, oldest first.
    accepted: VecDeque<Instant>,
    replies: Traffic,
    summaries: Traffic,
}

/// An OpenAI-compatible server that rate-limits like a provider. It runs until the
/// process ends; each mode starts its own, so windows do not carry over.
#[derive(Clone)]
pub(crate) struct FakeProvider {
    port: u16,
    limit: usize,
    state: Arc<Mutex<ServerState>>,
}

impl FakeProvider {
    pub(crate) fn start(limit: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let server = Self {
            port: listener.local_addr().expect("a bound port").port(),
            limit,
            state: Arc::default(),
        };
        let accepting = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let server = accepting.clone();
                std::thread::spawn(move || server.serve(stream));
            }
        });
        server
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub(crate) fn traffic(&self) -> (Traffic, Traffic) {
        let state = self.state.lock().expect("not poisoned");
        (state.replies, state.summaries)
    }

    fn serve(&self, mut stream: TcpStream) {
        let Some(body) = read_body(&stream) else {
            return;
        };
        let Ok(request) = serde_json::from_str::<Value>(&body) else {
            let _ = write_response(&mut stream, 400, &[], r#"{"error":{"message":"bad JSON"}}"#);
            return;
        };
        let summary = request["model"] == SUMMARY_MODEL;
        let streamed = request["stream"] == true;
        let tokens = prompt_tokens(&request);
        let now = Instant::now();
        // Decided under the lock, so concurrent requests cannot both take the
        // window's last place.
        let retry_after = {
            let mut state = self.state.lock().expect("not poisoned");
            while state
                .accepted
                .front()
                .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(60))
            {
                state.accepted.pop_front();
            }
            let full = state.accepted.len() >= self.limit;
            let retry_after = full.then(|| {
                let oldest = *state.accepted.front().expect("a full window");
                let free = (oldest + Duration::from_secs(60)).saturating_duration_since(now);
                free.as_secs_f64().ceil().max(1.0) as u64
            });
            if !full {
                state.accepted.push_back(now);
            }
            let traffic = if summary {
                &mut state.summaries
            } else {
                &mut state.replies
            };
            traffic.requests += 1;
            traffic.tokens_sent += tokens;
            match retry_after {
                Some(_) => traffic.rate_limited += 1,
                None => traffic.tokens_accepted += tokens,
            }
            retry_after
        };
        if let Some(seconds) = retry_after {
            let body = r#"{"error":{"message":"Rate limit reached: too many requests per minute","type":"rate_limit_exceeded"}}"#;
            let _ = write_response(
                &mut stream,
                429,
                &[("Retry-After", seconds.to_string())],
                body,
            );
            return;
        }
        std::thread::sleep(SERVER_LATENCY);
        let text = if summary {
            "The NPC overheard talk about families, work, art projects and plans for the \
             weekend; nothing urgent, but it remembers who said what."
        } else {
            "I hear you. Give me a moment and I'll see what I can do about that."
        };
        let completion = estimate_tokens(text) as u64;
        let usage = json!({"prompt_tokens": tokens, "completion_tokens": completion,
                           "total_tokens": tokens + completion});
        if streamed {
            let _ = write_stream(&mut stream, text, usage);
        } else {
            let body = json!({
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": usage,
            });
            let _ = write_response(&mut stream, 200, &[], &body.to_string());
        }
    }
}

/// The crate's estimate of the prompt the request carries.
fn prompt_tokens(request: &Value) -> u64 {
    let messages = request["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    messages
        .iter()
        .map(|m| 4 + estimate_tokens(m["content"].as_str().unwrap_or("")) as u64)
        .sum()
}

/// Reads one HTTP/1.1 request and returns its body (sized by `Content-Length`).
fn read_body(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    String::from_utf8(body).ok()
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Bad Request",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// A streamed reply: the text in two chunks, the finish reason, the usage, `[DONE]`.
fn write_stream(stream: &mut TcpStream, text: &str, usage: Value) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    )?;
    let middle = text.len() / 2;
    let middle = (middle..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    let mut events: Vec<Value> = [&text[..middle], &text[middle..]]
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}))
        .collect();
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    events.push(json!({"choices": [], "usage": usage}));
    for event in events {
        stream.write_all(format!("data: {event}\n\n").as_bytes())?;
    }
    stream.write_all(b"data: [DONE]\n\n")?;
    stream.flush()
}

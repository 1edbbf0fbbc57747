//! A scripted OpenAI-compatible server on 127.0.0.1 for fault injection and the
//! client-overhead benchmark. It speaks just enough HTTP/1.1: one request per
//! connection, answered from a script, then the connection closes.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum FakeReply {
    /// A whole response.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A server-sent-event stream of `data:` payloads, optionally ended by `[DONE]`.
    Stream { events: Vec<String>, done: bool },
    /// Accept the request, then say nothing for a long time.
    Hang,
    /// Wait, then answer.
    After(Duration, Box<FakeReply>),
    /// A body far larger than any client should read, made as it is written.
    Flood(Flood),
}

/// A `status` answer whose body is `head`, then `fill` repeated, then `tail`, `len`
/// bytes in all. The body is generated while it is written, so a 200 MB flood costs
/// the test no memory, and writing stops when the client hangs up.
#[derive(Clone, Debug)]
pub struct Flood {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub head: String,
    pub fill: String,
    pub tail: String,
    pub len: u64,
    /// Send `Content-Length`; otherwise the body ends when the connection closes.
    pub declare_length: bool,
}

/// 200 MB: far beyond every limit, and too much to read before a test times out.
pub const FLOOD_BYTES: u64 = 200 * 1024 * 1024;

impl Flood {
    fn new(status: u16, content_type: &'static str, head: &str, fill: &str, tail: &str) -> Self {
        Flood {
            status,
            content_type,
            headers: Vec::new(),
            head: head.to_owned(),
            fill: fill.to_owned(),
            tail: tail.to_owned(),
            len: FLOOD_BYTES,
            declare_length: false,
        }
    }

    /// A JSON error whose message never seems to end.
    pub fn error_body(status: u16) -> Self {
        Self::new(
            status,
            "application/json",
            r#"{"error":{"message":""#,
            "overflow ",
            r#""}}"#,
        )
    }

    /// A non-streamed completion whose text never seems to end.
    pub fn json_body() -> Self {
        Self::new(
            200,
            "application/json",
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":""#,
            "A",
            r#""},"finish_reason":"stop"}]}"#,
        )
    }

    /// An endless stream of ordinary, well-formed text chunks.
    pub fn sse_chunks() -> Self {
        let chunk = format!("data: {}\n\n", stream_events(&["lorem ipsum "], false)[0]);
        Self::new(200, "text/event-stream", "", &chunk, "")
    }

    /// One stream line that never ends: a text chunk with no closing quote or newline.
    pub fn sse_line() -> Self {
        Self::new(
            200,
            "text/event-stream",
            r#"data: {"choices":[{"index":0,"delta":{"content":""#,
            "A",
            "",
        )
    }

    pub fn with_length(mut self) -> Self {
        self.declare_length = true;
        self
    }
}

impl FakeReply {
    pub fn ok(body: String) -> Self {
        FakeReply::Json {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        FakeReply::Json {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let FakeReply::Json { headers, .. } | FakeReply::Flood(Flood { headers, .. }) = &mut self
        {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the client sends JSON")
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<FakeReply>,
    fallback: Option<FakeReply>,
    received: Vec<Received>,
    active: usize,
    max_active: usize,
    disconnects: usize,
    flooded: Vec<u64>,
}

/// The server. It runs until the process ends.
#[derive(Clone)]
pub struct FakeLlm {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl FakeLlm {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let server = Self {
            port,
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

    /// The API root, as a backend's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn push(&self, reply: FakeReply) -> &Self {
        self.state.lock().unwrap().script.push_back(reply);
        self
    }

    /// The answer once the script is used up.
    pub fn set_fallback(&self, reply: FakeReply) {
        self.state.lock().unwrap().fallback = Some(reply);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Requests whose client hung up while the server was still silent.
    pub fn disconnects(&self) -> usize {
        self.state.lock().unwrap().disconnects
    }

    /// The body bytes each finished flood got into the socket before the client
    /// hung up (or all of them, when it read everything).
    pub fn flooded(&self) -> Vec<u64> {
        self.state.lock().unwrap().flooded.clone()
    }

    /// The most requests that were being answered at the same time.
    pub fn max_concurrent(&self) -> usize {
        self.state.lock().unwrap().max_active
    }

    fn serve(&self, mut stream: TcpStream) {
        let Some(request) = read_request(&stream) else {
            return;
        };
        let reply = {
            let mut state = self.state.lock().unwrap();
            state.received.push(request);
            state.active += 1;
            state.max_active = state.max_active.max(state.active);
            state.script.pop_front().or_else(|| state.fallback.clone())
        };
        let reply = reply.unwrap_or_else(|| {
            FakeReply::status(
                500,
                r#"{"error":{"message":"the fake server's script is empty"}}"#,
            )
        });
        if matches!(reply, FakeReply::Hang) {
            if client_hung_up(&mut stream) {
                self.state.lock().unwrap().disconnects += 1;
            }
        } else {
            let _ = write_reply(&mut stream, reply, &self.state);
        }
        self.state.lock().unwrap().active -= 1;
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn write_reply(
    stream: &mut TcpStream,
    reply: FakeReply,
    state: &Mutex<State>,
) -> std::io::Result<()> {
    match reply {
        FakeReply::Json {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(body.as_bytes())
        }
        FakeReply::Stream { events, done } => {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            )?;
            for event in events {
                stream.write_all(format!("data: {event}\n\n").as_bytes())?;
                stream.flush()?;
                std::thread::sleep(Duration::from_millis(2));
            }
            if done {
                stream.write_all(b"data: [DONE]\n\n")?;
            }
            stream.flush()
        }
        FakeReply::Hang => Ok(()),
        FakeReply::After(wait, reply) => {
            std::thread::sleep(wait);
            write_reply(stream, *reply, state)
        }
        FakeReply::Flood(flood) => {
            let mut sent = 0;
            let result = write_flood(stream, &flood, &mut sent);
            state.lock().unwrap().flooded.push(sent);
            result
        }
    }
}

fn write_flood(stream: &mut TcpStream, flood: &Flood, sent: &mut u64) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nConnection: close\r\n",
        flood.status,
        reason(flood.status),
        flood.content_type
    );
    if flood.declare_length {
        head.push_str(&format!("Content-Length: {}\r\n", flood.len));
    }
    for (name, value) in &flood.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    // One reusable block of whole `fill`s, so writes are large and nothing grows.
    let block = flood.fill.repeat((64 * 1024 / flood.fill.len()).max(1));
    let body = flood.len;
    let tail = flood.tail.len() as u64;
    let mut write = |bytes: &[u8], sent: &mut u64| -> std::io::Result<()> {
        stream.write_all(bytes)?;
        *sent += bytes.len() as u64;
        Ok(())
    };
    write(flood.head.as_bytes(), sent)?;
    while *sent + tail < body {
        let room = (body - tail - *sent).min(block.len() as u64) as usize;
        write(&block.as_bytes()[..room], sent)?;
    }
    write(flood.tail.as_bytes(), sent)?;
    stream.flush()
}

/// Stays silent for up to 30 s; true when the client closes the connection first.
fn client_hung_up(stream: &mut TcpStream) -> bool {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut byte = [0u8; 1];
    while std::time::Instant::now() < deadline {
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// A non-streamed completion with usage figures.
pub fn completion(text: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fake",
        "system_fingerprint": "vendor-extra",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49,
                  "prompt_tokens_details": {"cached_tokens": 16}}
    })
    .to_string()
}

/// Stream events for `pieces`, then a finish reason and a usage chunk.
pub fn stream_events(pieces: &[&str], finish: bool) -> Vec<String> {
    let mut events: Vec<String> = pieces
        .iter()
        .map(|piece| {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
                .to_string()
        })
        .collect();
    if finish {
        events.push(
            serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                .to_string(),
        );
        events.push(
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 5, "prompt_cache_hit_tokens": 8}})
                .to_string(),
        );
    }
    events
}

/// A reply request as the plugin would send it, for calling a backend directly.
pub fn reply_request(system: &str, line: &str) -> bevy_npc_memory::backends::ChatRequest {
    use bevy_npc_memory::backends::{ChatRequest, RequestKind};
    use bevy_npc_memory::memory::{NpcId, PromptMessage, ReplyInput, Role};
    ChatRequest {
        npc: NpcId::new("echo7"),
        kind: RequestKind::Reply(ReplyInput {
            npc_name: "ECHO-7".into(),
            summary: "".into(),
        }),
        messages: vec![
            PromptMessage::new(Role::System, system),
            PromptMessage::new(Role::User, line),
        ],
        actions: Vec::new(),
    }
}

/// `time` as an HTTP date (IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(time: std::time::SystemTime) -> String {
    let secs = time
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Walk the calendar year by year, then month by month: slow, obviously right.
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let (mut year, mut left) = (1970, days);
    while left >= if leap(year) { 366 } else { 365 } {
        left -= if leap(year) { 366 } else { 365 };
        year += 1;
    }
    let lengths = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while left >= lengths[month] {
        left -= lengths[month];
        month += 1;
    }
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        left + 1,
        MONTHS[month],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

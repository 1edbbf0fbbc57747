// Per-message cost of a static embedding in Rust: WordPiece tokenize + table lookup + mean + L2 normalize.
// Reads turn texts straight from the LoCoMo file (crude scan of "text": "..." fields), vocab from the model package.
use std::collections::HashMap;
use std::time::Instant;

fn basic(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.to_lowercase().split_whitespace() {
        let mut cur = String::new();
        for ch in w.chars() {
            if ch.is_ascii_punctuation() || (!ch.is_alphanumeric() && !ch.is_ascii()) {
                if !cur.is_empty() { out.push(std::mem::take(&mut cur)); }
                out.push(ch.to_string());
            } else { cur.push(ch); }
        }
        if !cur.is_empty() { out.push(cur); }
    }
    out
}

fn wordpiece(text: &str, vocab: &HashMap<String, u32>, ids: &mut Vec<u32>, buf: &mut String) {
    ids.clear();
    for w in basic(text) {
        let chars: Vec<(usize, char)> = w.char_indices().collect();
        let n = chars.len();
        let mut s = 0; let start = ids.len(); let mut bad = false;
        while s < n {
            let mut e = n; let mut found = None;
            while s < e {
                let bs = chars[s].0; let be = if e < n { chars[e].0 } else { w.len() };
                buf.clear(); if s > 0 { buf.push_str("##"); } buf.push_str(&w[bs..be]);
                if let Some(&id) = vocab.get(buf.as_str()) { found = Some(id); break; }
                e -= 1;
            }
            match found { Some(id) => { ids.push(id); s = e; } None => { bad = true; break; } }
        }
        if bad { ids.truncate(start); ids.push(100); }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab_path = &args[1]; let data_path = &args[2];
    let dim: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(256);
    let vocab: HashMap<String, u32> = std::fs::read_to_string(vocab_path).unwrap().lines()
        .enumerate().map(|(i, l)| (l.to_string(), i as u32)).collect();
    let data = std::fs::read_to_string(data_path).unwrap();
    let mut msgs = Vec::new();
    for part in data.split("\"text\": \"").skip(1) {
        let mut s = String::new(); let mut esc = false;
        for c in part.chars() { if esc { s.push(c); esc = false; } else if c == '\\' { esc = true; } else if c == '"' { break; } else { s.push(c); } }
        msgs.push(s);
    }
    let v = vocab.len();
    let mut x: u64 = 88172645463325252;
    let table: Vec<f32> = (0..v * dim).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x % 1000) as f32 / 1000.0 - 0.5 }).collect();
    let table16: Vec<i8> = table.iter().map(|f| (f * 254.0) as i8).collect();
    let mut ids = Vec::new(); let mut buf = String::new(); let mut acc = vec![0f32; dim];
    let mut total_tok = 0usize; let mut sink = 0f32;
    for rep in 0..3 {
        let t0 = Instant::now();
        for m in &msgs { wordpiece(m, &vocab, &mut ids, &mut buf); total_tok += ids.len(); }
        let t_tok = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        for m in &msgs {
            wordpiece(m, &vocab, &mut ids, &mut buf);
            acc.iter_mut().for_each(|a| *a = 0.0);
            for &id in &ids { let row = &table[id as usize * dim..(id as usize + 1) * dim]; for (a, r) in acc.iter_mut().zip(row) { *a += r; } }
            let n = acc.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-9);
            sink += acc[0] / n;
        }
        let t_all = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        for m in &msgs {
            wordpiece(m, &vocab, &mut ids, &mut buf);
            acc.iter_mut().for_each(|a| *a = 0.0);
            for &id in &ids { let row = &table16[id as usize * dim..(id as usize + 1) * dim]; for (a, r) in acc.iter_mut().zip(row) { *a += *r as f32; } }
            sink += acc[1];
        }
        let t_i8 = t2.elapsed().as_secs_f64();
        let nm = msgs.len() as f64;
        println!("rep {} msgs {} tokens/msg {:.1}: tokenize {:.2} us/msg; tokenize+lookup+mean f32 {:.2} us/msg; int8 table {:.2} us/msg",
                 rep, msgs.len(), total_tok as f64 / nm / (rep + 1) as f64, t_tok / nm * 1e6, t_all / nm * 1e6, t_i8 / nm * 1e6);
    }
    // cosine of one query against N stored vectors
    let n = 10000; let store: Vec<f32> = table[..n * dim].to_vec();
    let t3 = Instant::now();
    let mut best = f32::MIN;
    for r in 0..n { let s: f32 = store[r * dim..(r + 1) * dim].iter().zip(&acc).map(|(a, b)| a * b).sum(); if s > best { best = s; } }
    println!("dot-product scan of {} stored vectors ({} dims): {:.1} us total", n, dim, t3.elapsed().as_secs_f64() * 1e6);
    println!("sink {} {}", sink, best);
}

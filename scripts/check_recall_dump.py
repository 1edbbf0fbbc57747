#!/usr/bin/env python3
"""Checks memory_bench's evidence recall from its dumped prompts alone.

    cargo run --release -p bevy_npc_memory_bench --bin memory_bench -- \\
        --data DATA --strategy layered --budget 2000 --dump-prompts DUMP
    python3 scripts/check_recall_dump.py DATA DUMP [--json]

DATA is the LoCoMo-format file the bench read; DUMP holds one file per scored
question, DUMP/<sample_id>/<question index>.json, a JSON list of
{"role", "content"}: the exact messages the NPC would send.

The rule (the same as bench/src/evidence.rs): an evidence turn is recalled when
the prompt sends its text word for word, either
  - as a whole message of its own (the window), except the last message, which
    is the question itself, or
  - as a line of the system message's recalled block, `- "speaker": "text"`
    (or compact: `P: "text"`, `Y: "text"`), whose quoted text, decoded as a
    JSON string, is the turn's text.
A turn's text is its `text`, plus ` [shares a photo: <blip_caption>]` when it
has a caption. Matching is on whole texts, never substrings. Summaries, facts
and segments do not count. The bench applies the rule to log indices; the two
agree whenever a turn's text is unique in its conversation (warned otherwise).

Prints the same recall lines as memory_bench's text report, or with --json the
same `evidence_recall` object as its JSON report. Standard library only.
"""

import json
import re
import sys
from pathlib import Path

# The recalled block's heading, in English and Chinese (src/memory/assembly.rs).
# The block is the last one of the system message.
RECALLED_HEADINGS = ("[Recalled word for word", "[回忆的原话")
# `- "speaker": "text"`, both JSON string literals, or compact (the bench's
# --recall-lines compact) `P: "text"` for the player and `Y: "text"` for the NPC.
# A quoted text keeps every quote and line break escaped, so a line can hold only
# one recalled turn.
QUOTED = r'"(?:[^"\\]|\\.)*"'
RECALLED_LINE = re.compile(r"^(?:- %s|P|Y): (%s)$" % (QUOTED, QUOTED))
SESSION = re.compile(r"^session_(\d+)$")


def normalize(evidence_id):
    """An evidence id as the data's README says (D:01:02 -> D1:2)."""
    id_ = evidence_id.strip().replace("D:", "D", 1)
    if ":" not in id_:
        return id_
    session, turn = id_.split(":", 1)
    return "D%s:%s" % (session.lstrip("D").lstrip("0"), turn.lstrip("0"))


def evidence(qa):
    """A question's evidence ids, split on `;` and spaces, normalized."""
    ids = []
    for entry in qa.get("evidence") or []:
        if isinstance(entry, str):
            ids += [normalize(s) for s in re.split(r"[; ]", entry) if s.strip()]
    return ids


def turn_text(turn):
    text = turn.get("text")
    text = text if isinstance(text, str) else ""
    caption = turn.get("blip_caption")
    if isinstance(caption, str):
        text += " [shares a photo: %s]" % caption
    return text


def turns_by_id(conversation):
    """Normalized dia_id -> text, for every session whose value is a list."""
    sessions = sorted(
        (int(m.group(1)), value)
        for key, value in conversation.items()
        if (m := SESSION.match(key)) and isinstance(value, list)
    )
    texts = {}
    for _, turns in sessions:
        for turn in turns:
            if isinstance(turn.get("dia_id"), str):
                texts[normalize(turn["dia_id"])] = turn_text(turn)
    return texts


def safe_name(sample_id):
    """The dump folder of a sample id (bench/src/dump.rs)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", sample_id) or "_"


def sent_texts(messages):
    """Texts the prompt sends word for word: (window messages, recalled lines)."""
    window, recalled = set(), set()
    for message in messages[:-1]:
        if message["role"] != "system":
            window.add(message["content"])
            continue
        in_block = False
        for line in message["content"].split("\n"):
            if line.startswith(RECALLED_HEADINGS):
                in_block = True
            elif in_block and (m := RECALLED_LINE.match(line)):
                recalled.add(json.loads(m.group(1)))
    return window, recalled


def category_of(qa):
    c = qa.get("category")
    return c if isinstance(c, int) and not isinstance(c, bool) and c >= 0 else 0


def check(data_path, dump):
    records = json.loads(Path(data_path).read_text(encoding="utf-8"))
    found_by_category = {}
    totals = {"questions": 0, "skipped": 0, "ambiguous": 0, "window": 0, "recalled": 0}
    for record in records:
        sample_id = record.get("sample_id") or "?"
        folder = Path(dump) / safe_name(sample_id)
        if not folder.is_dir():
            continue  # not in this run (--split or --samples)
        texts = turns_by_id(record["conversation"])
        counts = {}
        for text in texts.values():
            counts[text] = counts.get(text, 0) + 1
        for number, qa in enumerate(record.get("qa") or []):
            wanted = {id_ for id_ in evidence(qa) if id_ in texts}
            if not wanted:
                totals["skipped"] += 1
                continue
            totals["questions"] += 1
            prompt = json.loads((folder / ("%d.json" % number)).read_text(encoding="utf-8"))
            window, recalled = sent_texts(prompt)
            found = 0
            for id_ in wanted:
                text = texts[id_]
                totals["ambiguous"] += counts[text] > 1
                if text in window or text in recalled:
                    found += 1
                    totals["window" if text in window else "recalled"] += 1
            found_by_category.setdefault(category_of(qa), []).append((found, len(wanted)))
    return totals, report(found_by_category)


def report(by_category):
    """The bench's `evidence_recall` object (bench/src/evidence.rs)."""

    def mean(found):
        return sum(f / w for f, w in found) / len(found) if found else 0.0

    def share(found, hit):
        return sum(1 for f, w in found if hit(f, w)) / len(found) if found else 0.0

    def any_(found):
        return share(found, lambda f, w: f > 0)

    def all_(found):
        return share(found, lambda f, w: f == w)

    order = sorted(by_category)
    scored = [f for c in order if 1 <= c <= 4 for f in by_category[c]]
    return {
        "overall": mean(scored),
        "any_evidence": any_(scored),
        "fully_covered": all_(scored),
        "by_category": {str(c): mean(by_category[c]) for c in order},
        "any_by_category": {str(c): any_(by_category[c]) for c in order},
        "fully_covered_by_category": {str(c): all_(by_category[c]) for c in order},
    }


def main(argv):
    args = [a for a in argv if a != "--json"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    totals, recall = check(*args)
    if totals["ambiguous"]:
        print(
            "warning: %d evidence turns share their text with another turn; "
            "the text cannot tell them apart" % totals["ambiguous"],
            file=sys.stderr,
        )
    if "--json" in argv:
        print(json.dumps(dict(totals, evidence_recall=recall)))
        return 0
    print("questions %d  skipped %d" % (totals["questions"], totals["skipped"]))
    print(
        "evidence recall (cat 1-4) %.3f  any evidence %.3f  fully covered %.3f"
        % (recall["overall"], recall["any_evidence"], recall["fully_covered"])
    )
    for c, value in recall["by_category"].items():
        print(
            "  category %s: %.3f  any %.3f  fully %.3f"
            % (c, value, recall["any_by_category"][c], recall["fully_covered_by_category"][c])
        )
    print("found in the window %d, in recalled lines %d" % (totals["window"], totals["recalled"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

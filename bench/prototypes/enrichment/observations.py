"""Writes OUT (a JSON object: a turn's chat line -> the text of every LoCoMo
observation that cites the turn as its evidence), for XP_ENRICH.

The observations are the dataset's own per-session facts, each with the dialogue
ids it came from, written by a large model when LoCoMo was made. They stand in for
what a capable model could write while the summaries are folded. OUT holds
LoCoMo text: keep it outside the project (for example in /tmp).

    python3 observations.py /tmp/notes/observations.json
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("LOCOMO", os.path.join(HERE, "../../../../shared/bench/locomo/locomo_dev.json"))


def turn_text(turn):
    # The same line the bench logs (bench/src/locomo.rs, turn_text).
    text = turn.get("text", "")
    if turn.get("blip_caption"):
        text += " [shares a photo: %s]" % turn["blip_caption"]
    return text


def turns(sample):
    """A conversation's turns, session by session, in log order."""
    for key, session in sample["conversation"].items():
        if key.startswith("session_") and isinstance(session, list):
            yield from session


def main(out):
    notes, cited = {}, 0
    for sample in json.load(open(DATA)):
        by_turn = {}
        for session in sample["observation"].values():
            for facts in session.values():
                for text, ids in facts:
                    ids = ids if isinstance(ids, list) else re.split(r"[;,\s]+", ids)
                    for dia_id in filter(None, (i.strip() for i in ids)):
                        by_turn.setdefault(dia_id, []).append(text)
        for turn in turns(sample):
            if turn["dia_id"] in by_turn:
                cited += 1
                notes[turn_text(turn)] = " ".join(by_turn[turn["dia_id"]])
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    json.dump(notes, open(out, "w"))
    print("%d turns cited by an observation" % cited)


if __name__ == "__main__":
    main(sys.argv[1])

"""Drop training lines that resemble the evaluation sessions, so those stay unseen.

    python training/decontaminate.py [--data ../shared/data/realtraffic-dev/sessions.jsonl]
                                     [--max-cosine 0.65] [--assistant-replies] [--write] FILE.jsonl ...

Every sentence of a single-sentence set, and every prose sentence of a mixed prompt, is compared (local
model, cosine) with every sentence of the evaluation prompts and of their labelled memories (with
`--assistant-replies`, also of the assistant's replies before and after each prompt, which the Stop hook
reads); a line any of whose sentences comes within `--max-cosine` is dropped. Reply sentences and lines
of a reply set are compared without their markdown decoration, as the gate judges them. Without `--write` it only prints what it would
drop. Run it on any set written after its writer saw examples shaped like the evaluation data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from octygraph.judgement.gate import judged_segments
from training.common import HERE, embed, read_jsonl

DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "realtraffic-dev" / "sessions.jsonl"


def _prose(text: str, *, assistant: bool = False) -> list[str]:
    return [s.text for s in judged_segments(text, assistant=assistant) if not s.machine]


def evaluation_sentences(path: Path, *, replies: bool = False) -> list[str]:
    out: list[str] = []
    for session in read_jsonl(path):
        for turn in session["turns"]:
            out += [s for s in _prose(turn["prompt"]) if len(s.split()) >= 4]
            out += [m["text"] for m in turn["label"]["memories"]]
            if replies:
                for key in ("assistant_before", "assistant_after"):
                    reply = turn.get(key) or ""
                    out += [s for s in _prose(reply, assistant=True) if len(s.split()) >= 4]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--max-cosine", type=float, default=0.65)
    ap.add_argument(
        "--assistant-replies",
        action="store_true",
        help="also compare with the sentences of the assistant's replies in the sessions",
    )
    ap.add_argument("--write", action="store_true", help="rewrite the files without those lines")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"No evaluation sessions at {args.data}; pass --data.")
    reference = embed(evaluation_sentences(args.data, replies=args.assistant_replies))
    for path in args.files:
        items = list(read_jsonl(path))
        per_item = [
            _prose(i["prompt"])
            if "prompt" in i
            else _prose(i["text"], assistant=True) or [i["text"]]
            if i.get("source") == "assistant"
            else [i["text"]]
            for i in items
        ]
        # One embedding call for the whole file: each call reads the vector cache from disk.
        flat = [s for sentences in per_item for s in sentences]
        closest_of = dict(zip(flat, (embed(flat) @ reference.T).max(axis=1), strict=True))
        kept = []
        for item, sentences in zip(items, per_item, strict=True):
            closest = max((float(closest_of[s]) for s in sentences), default=0.0)
            if closest < args.max_cosine:
                kept.append(item)
            else:
                print(f"{path.name}: {closest:.2f} {sentences[0][:90]!r}")
        print(
            f"{path}: {len(items)} lines, {len(items) - len(kept)} too close to the evaluation set"
        )
        if args.write:
            path.write_text("".join(json.dumps(item) + "\n" for item in kept), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write bot/language/english_words.txt.gz: the lower-case English words of SCOWL's "american-english" list
(Debian's wamerican, /usr/share/dict/american-english), from which the reader tells a product's name ("xformers",
"deepspeed") from an English word. The list's copyright notice is kept beside it (english_words.COPYRIGHT).

    apt-get install wamerican && .venv/bin/python tools/english_words.py
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

SOURCE = Path("/usr/share/dict/american-english")
TARGET = Path(__file__).resolve().parent.parent / "bot" / "language" / "english_words.txt.gz"


def main() -> int:
    words = sorted({w.strip() for w in SOURCE.read_text(encoding="utf-8").splitlines()
                    if w.strip().isalpha() and w.strip().isascii() and w.strip().islower()})
    # mtime=0: the same list gives the same bytes
    TARGET.write_bytes(gzip.compress(("\n".join(words) + "\n").encode(), mtime=0))
    print(f"{TARGET}: {len(words)} words from {SOURCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

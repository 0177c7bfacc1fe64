"""Word tables for ``bot.language.intents``: text normalisation, clause splitting and the named regexes.

Everything here is pure and linear-time: every pattern is a bounded alternation of literal words, with no
nested unbounded quantifiers, and the text is cut to a few KB before any of them runs.

After :func:`normalise` the text is lower case, so the placeholders ``HOST`` and ``BUILD`` (upper case, put in
by ``bot.language.intents`` where a config name or a host-like name stood) can never collide with chat text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from bot.config import ALL_HOSTS, Config
from bot.language.intents_numbers import JOBS_EXPR_RE, QUOTED_COUNT_RE, canonical_numbers

MAX_RAW = 16_384  # raw characters looked at (markup and code blocks are removed from these)
MAX_SCAN = 4_096  # normalised characters searched for intent
MAX_DIGITS = 9  # longer numbers are out of every bound; never int() a huge digit string
DIGITS_RE = re.compile(r"-?[0-9]+")
UNWORKABLE = -1  # the value of an expression rigops cannot work out in chat (out of every bound)
UNWORKABLE_NOTE = " (nproc or a variable: rigops cannot work that out from chat, so name a number)"
UNSAID_NOTE = " (the count is not said: rigops cannot work it out from chat, so name a number)"
RANGE_NOTE = " (a range or a bound, not one count: name a number)"
CORE_TALK_NOTE = (" (the cores are talked of, but no count rigops can read is given: name a number, or leave the"
                  " cores out for the default)")

# --- normalisation -------------------------------------------------------------------------------------

_CHAR_MAP = str.maketrans({
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2043": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u3000": " ", "\t": " ", "\r": "\n",
    "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None,
    "\u3001": ", ", "\u3002": ". ",  # the ideographic comma and full stop
})
CODE_BLOCK_RE = re.compile(r"```.*?(?:```|\Z)", re.S)
INLINE_CODE_RE = re.compile(r"`([^`\n]{0,200})`")
STRIKE_RE = re.compile(r"~[^~\n]{1,300}~")
SLACK_MARKUP_RE = re.compile(r"<[^<>\n]{0,500}>")  # <@U1>, <#C1|ops>, <!here>, <http://x|label>
MENTION_RE = re.compile(r"(?<=\S)[ ]*<@[UW][A-Z0-9]{2,20}(?:\|[^<>\n]{0,80})?>[ ]*(?=\S)")
# A mention that is a word of the sentence around it, not who it is said to: "before letting <@U0RIGOPS> rebuild X",
# "i asked <@U07ALICE> to kill it", "waiting for <@U07BOB> to …".
MENTION_IN_SENTENCE_RE = re.compile(r"\b(?:let|lets|letting|have|having|ask|asking|asked|get|getting|make|making|tell"
                                    r"|telling|told|wait for|waiting for|waited for|leave it to|thanks to|like|than)"
                                    r"\s*$", re.I)


def _mention(m: re.Match[str]) -> str:
    line = m.string[m.string.rfind("\n", 0, m.start()) + 1: m.start()].lstrip()
    if line.startswith(("&gt;", ">")):
        return " rigops "  # a quote line stays one: "&gt; @rigops kill X" above "nvm, it's working now" is quoted
    return " someone " if MENTION_IN_SENTENCE_RE.search(m.string[max(0, m.start() - 24): m.start()]) else " \n "


# What points at a code block as the way to do what is asked: "rebuild X like this:", "with this:", "run:".
CODE_POINTED_AT_RE = re.compile(r"\b(?:like this|like so|as follows|this way|with this|using this|with|using|run|via"
                                r"|the command|this command|these flags)\s*:?\s*$", re.I)


# ... or after it: "```-j$(shell nproc)```\n@rigops rebuild X like that".
CODE_POINTED_BACK_RE = re.compile(r"\s*(?:<@[UW][A-Z0-9]{2,20}>\s*)?[^\n`]{0,60}\b(?:like that|that way|with that"
                                  r"|with those|the same way|like above|as above)\b", re.I)


def _code_block(m: re.Match[str]) -> str:
    """A code block is no request of its own; pointed at by what asks ("rebuild X like this: ```… -j$(nproc)```",
    "```…``` rebuild X like that"), its jobs setting is the one asked for (refused when it is a formula)."""
    if CODE_POINTED_AT_RE.search(m.string[max(0, m.start() - 30): m.start()]) or CODE_POINTED_BACK_RE.match(
            m.string, m.end()):
        inner = m.group(0).strip("`")
        if found := CODE_JOBS_IN_RE.search(inner):
            said = found.group(0)
            if JOBS_EXPR_RE.search(said.lower()) or "$" in said:
                return " -j $expr \n "
            return f" {said} \n "
    return " \n "


PLACEHOLDER_RE = re.compile(r"<[a-z][a-z_ -]{2,40}>", re.I)  # "MAX_JOBS=<half-your-cpu-cores>": not a number
ENTITIES = (("&gt;", ">"), ("&lt;", "<"), ("&quot;", '"'), ("&#39;", "'"), ("&amp;", "&"))
QUOTED_LINE_RE = re.compile(r"^ *>[^\n]*", re.M)
QUOTED_SPAN_RE = re.compile(r'"[^"\n]{0,300}"')
URL_RE = re.compile(r"\b(?:https?|ftp|ssh|file)://\S*|\bwww\.\S*")
THUMBS_UP_TO_RE = re.compile(r"(?:👍[\U0001F3FB-\U0001F3FF]?|:\+1:|:thumbsup:|:thumbs_up:)\s*(?=(?:to|for|on)\b)")
EMOJI_RE = re.compile(r":[a-z0-9_+'-]{1,40}:|"  # Slack's :name: and the emoji characters themselves ("now😤")
                      r"(?<![\w:])[:;]-?[()\[\]/|](?![\w(])|"  # and the emoticons: ":(", ";)", ":-/"
                      "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff][\ufe0f\u200d\U0001f3fb-\U0001f3ff]*")
REPEATED_RE = re.compile(r"\b([a-z]+(?: [a-z]+){0,2})(?:[ ,!]+\1\b)+")
EMPHASIS_RE = re.compile(r"[*]+|(?<![\w])_+|_+(?![\w])")
COMMA_GLUED_RE = re.compile(r"(?<=[a-z]),(?=[a-z]{2})")
# ... but an asterisk between two operands is a product ("cores * 0.75", "[GPU count] * 4", "2*8"), not bold
TIMES_RE = re.compile(r"(?<=[\w\])]) \* (?=[\w(\[$])|(?<=[\w\])])\*(?=\d)|(?<=\d)\*(?=[\w(\[$])")
SPACES_RE = re.compile(r"[ ]{2,}")
# What a polite "mind …ing" asks, the verb as a request says it: "mind bouncing X?" is "could you bounce X".
_MIND_VERBS = {"restarting": "restart", "rebuilding": "rebuild", "bouncing": "bounce", "killing": "kill",
               "stopping": "stop", "rerunning": "rerun", "retrying": "retry", "kicking": "kick", "checking": "check",
               "showing": "show", "posting": "post", "pulling": "pull", "grabbing": "grab", "nuking": "nuke",
               "aborting": "abort", "cancelling": "cancel", "canceling": "cancel", "relaunching": "relaunch",
               "recompiling": "recompile", "dropping": "drop", "lowering": "lower",
               "bumping": "bump", "pasting": "paste", "sharing": "share", "running": "run"}
TYPO_FIXES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"\bre[- ]?(build|run|start|try|launch)\b"), r"re\1"),
    (re.compile(r"\bw/(?!o)\s*|\bw (?=-?j?\d{1,4}\b)"), "with "),  # "retry w/ 8", "retry w 8"
    (re.compile(r"\b(the|its|build) console(?: output| log)?\b"), r"\1 log"),  # "tail the console of the build"
    (re.compile(r"\b(?:plz|pls|plox|pleas|pleeease|pleease)\b"), "please"),
    (re.compile(r"\b(?:gimme|giv me|give us)\b"), "give me"),
    (re.compile(r"\btry (?:it |that |this )?(?:again|once more)\b"), "retry"),
    (re.compile(r"\b(?:how's|hows|how is|how are|how're|how goes|how's it going with|how is it going with)\b"),
     "how is"),
    # CI-bot commands and their slang: "/retest vllm", "retest X please", "/test X", "`/tag-and-rerun-ci` X",
    # "tickle build X", "slap a retry on it", "give X one more try"
    (re.compile(r"(?<![\w/-])[/!](?:re-?test|test|rerun(?:-ci)?|retry|rebuild|restart|tag-and-rerun-ci|ok-to-test)\b"
                r"|(?<![\w/-])!build\b"
                r"|(?<![\w-])re-?test\b|\btickle(?: the)? build(?: of)?\b"), "rebuild"),
    (re.compile(r"\b(?:slap|put|throw|stick) an? (?:retry|rerun|rebuild|restart) on\b"), "rebuild"),
    (re.compile(r"\b(?:what's|whats|what is|what are|what're)\b"), "what is"),
    (re.compile(r"\b(?:nvidia[- ]?smi|nvidiasmi|nvidai-smi|nvida-smi|nvidia-sim)\b"), "nvidia-smi"),
    (re.compile(r"\bteh\b"), "the"),
    (re.compile(r"\bineed\b"), "i need"),
    # a reason run on after a request with no stop: "kill X on Y this job is no longer needed"
    (re.compile(r"(?<=\w) (?=(?:this|that|the) (?:job|build|run|one) (?:is|isn't|was|has|will) (?:no longer|not)\b)"),
     ". "),
    # the packagers' own counts of the machine: rpm's "%{?_smp_mflags}" (its underscore taken for emphasis)
    (re.compile(r"%\{\??[ _]?smp_(?:mflags|build_ncpus|ncpus)\}"), "-j $(nproc)"),
    (re.compile(r"\btry to (?=re-?trigger|rebuild|restart|rerun|relaunch|retry)"), ""),  # "try to retrigger"
    (re.compile(r"\bmax(?:imum)?[ _-]?parallel(?:ism)?(?: of| at| =)? (?=\d{1,4}\b)"), "-j"),  # "to max parallel 64"
    # "run `nvidia-smi` on HOST and provide the output": the tool's own output, no log
    (re.compile(r"\b(nvidia-smi|free -h|free|htop|top|df -h|nvtop)\b([^.?!\n]{0,40}?)(?:,? and|,) (?:then )?"
                r"(?:provide|post|share|send|paste|show|give|report)(?: me| us| back)? (?:the|its|their|that) "
                r"(?:output|result|results)\b"), r"\1\2"),
    (re.compile(r"\b(?:nvtop|gpustat|nvitop)\b(?!.*\bnvidia-smi\b)", re.S), "nvidia-smi"),  # the GPUs' other
    # viewers, where nvidia-smi is not named beside them ("nvitop and nvidia-smi give me different numbers")
    # "could you try restarting it?": the request itself
    (re.compile(r"\btry (restarting|rebuilding|rerunning|relaunching|bouncing|recompiling)\b"),
     lambda m: _MIND_VERBS[m.group(1)]),
    # "mind bouncing X?", "would you mind restarting it": a polite request (not "never mind", "don't mind")
    (re.compile(r"(?<!never )(?<!n't )(?<!not )\b(?:(?:would|do|d') ?(?:you|u) )?mind (?=(?:" + "|".join(_MIND_VERBS)
                + r")\b)"), "could you "),
    (re.compile(r"(?<=could you )(" + "|".join(_MIND_VERBS) + r")\b"), lambda m: _MIND_VERBS[m.group(1)]),
    (re.compile(r"(?<=\w) @ (?=(?:-?j ?)?\d{1,4}\b)"), " at "),  # "rerun @ 8 pls"
    (re.compile(r"(?<![\w-])max[- ]?jobs\b"), "max_jobs"),  # "`max-jobs` set to 1", "MaxJobs to 0", "max jobs"
    (re.compile(r"\b(?:cuda|gpu|video|graphics) (?:card )?memory\b"), "vram"),  # "the used cuda memory": the GPUs'
    # "the amount of memory per graphics card", "memory on each GPU": the GPUs' own
    (re.compile(r"\b(?:memory|mem) (?:per|of each|on each|of the|on the|of every|on every) (?:graphics |video )?"
                r"(?:gpus?|cards?|devices?)(?:\(s\))?(?![\w-])"), "vram"),
    (re.compile(r"\bvram vram\b"), "vram"),
    (re.compile(r"\bkil\b"), "kill"),
    (re.compile(r"\b(go|do|build|compil|swapp|runn|kill|restart|rebuild|stopp|crash|link|hang|freez|eat|progress"
                r"|oom)in'?(?=\s|$|[,.?!;:])"), r"\1ing"),
    (re.compile(r"\b(?:rn|atm)\b"), "now"),
    (re.compile(r"\b(?:on|at|in) thr\b(?=[\s,.!?]|$)"), "there"),  # "check mem on thr": there, not threads
    (re.compile(r"\b(?:thrds|thrd|threds|thread's|thr)\b(?=[\s,.!?]|$)"), "threads"),
    # chat shorthand: "cn sum1 check mem", "can some1 kill it", "logz", "lemme see the log", "vllm stat?"
    (re.compile(r"\bcn (?=(?:u|you|sum1|some1|someone|somebody|any1|anyone|we|i)\b)"), "can "),
    (re.compile(r"\b(?:sum1|some1|sum1e|smn)\b"), "someone"),
    (re.compile(r"\b(?:any1|ne1)\b"), "anyone"),
    (re.compile(r"\blogz\b"), "logs"),
    (re.compile(r"\b(?:lemme|let me) see (?=the |da |its )"), "show me "),  # not "let me check the log": mine
    (re.compile(r"(?<=\w) stat(?=\s*\?)"), " status"),
    (re.compile(r"(?<![\w-])smi(?= (?:on |for |of |@ )?[a-z][\w-]*\d|\s*\?|$"
                r"| (?:results?|output|dump|readout|numbers|stats)\b)"), "nvidia-smi"),  # "pls post smi results"
    (re.compile(r"\b(post|show|run|check|paste|get|grab|send) (?:me |us |an? |the )?smi\b"), r"\1 nvidia-smi"),
    (re.compile(r"\b(?:jbs|jobz)\b"), "jobs"),
    (re.compile(r"\b(?:single|one|1)[- ]job\b(?= (?:compile|compilation|build|make|mode)\b)"), "single-threaded"),
)
# Inline code is dropped unless it is nothing but a parallelism token (so "try `-j20`" still works).
CODE_JOBS_RE = re.compile(
    r"\s*(?:-{1,2}j(?:obs)?\s*=?\s*(?:-?\d{1,6}|\$\(+ ?(?:shell )?nproc\)?[)/*+ 0-9-]{0,12})|j\d{1,6}"
    r"|(?:max_jobs|cmake_build_parallel_level)\s*=\s*\d{1,6}"
    r"|-{1,2}parallel[ =]?\d{1,6}|(?:make|ninja) -j ?(?:\d{1,6}|\$\(+ ?(?:shell )?nproc\)?[)/*+ 0-9-]{0,12}))\s*",
    re.I,
)


# Inline code that is a command people would type ("can you run `free -h`", "`tail -n 80` the log") is read as
# words: Slack users put commands in backticks. Other inline code (a path, a compiler's words) is dropped.
CODE_COMMAND_RE = re.compile(
    r"\s*(?:free|df|nvidia-?smi|smi|top|htop|btop|nvtop|uptime|vmstat|tail|journalctl|kill|pkill|killall|status|mem"
    r"|memory|gpu|gpus|log|logs|rebuild|restart|retry|stop|abort|cancel|rigops|/rigops)"
    r"(?:\s+[-\w=./]{1,24}){0,5}\s*",
    re.I,
)


# A button or menu item named in code, words only: "press `Start new build` for X", "`Re-run all jobs`".
CODE_BUTTON_RE = re.compile(r"\s*(?:start|run|re-?run|re-?start|re-?build|retry|re-?try|cancel|stop|abort)"
                            r"(?: [a-z]{1,12}){0,4}\s*", re.I)


# One name in code, as people quote a package, a build or a host: "`tensorrt-llm`", "`node-3`", "`vllm`". Not a
# word of a log ("`Killed`", "`OOM`": capitalised or upper case), an identifier ("`common_ops`"), a path, a flag or a
# number.
CODE_NAME_RE = re.compile(r"\s*(?=[a-z0-9.+-]*[a-z])[a-z0-9][a-z0-9.+-]{1,39}\s*")
# A jobs setting inside a longer command: "`--build-arg max_jobs=8`", "`export MAX_JOBS=4`", "`ninja -j 2`".
CODE_JOBS_IN_RE = re.compile(
    r"(?<![\w-])(?:-{1,2}j(?:obs)?\s*=?\s*(?:-?\d{1,6}|\$\(+ ?(?:shell )?nproc\)?[)/*+ 0-9-]{0,12})"
    r"|(?:max_jobs|cmake_build_parallel_level|make_jobs|ninja_jobs|num_jobs|build_jobs|jobs)\s*=\s*\S{1,30}"
    r"|-{1,2}max-jobs[ =]\d{1,6}|-{1,2}parallel[ =]?(?:\d{1,6}|\$\(+ ?nproc\)?[)/*+ 0-9-]{0,12})"
    r"|\"(?:jobs|max_jobs|parallel)\"\s*:\s*\d{1,6})",  # a JSON setting: `"jobs": 0`
    re.I,
)
# "rebuild at `max(cpu_count // 2, 4)`": code where a number goes is an expression rigops cannot work out.
CODE_AFTER_JOBS_WORD_RE = re.compile(r"(?:\b(?:at|with|to|use|using)|-j|=)\s*$", re.I)


# "`make -j`", "`-j`": the flag with no number, which runs as many jobs as there are targets.
# "`--tail=50`", "`-n 200`": how many log lines, as the option says it.
CODE_LINES_RE = re.compile(r"\s*(?:--(?:tail|last|lines)[= ]?\d{1,6}|-n ?\d{1,6})\s*", re.I)
CODE_BARE_J_RE = re.compile(r"\s*(?:(?:make|ninja|gmake|cmake --build \S+(?: --)?)\s+)?-j\s*", re.I)
_FLAG_NAMED_RE = re.compile(r"\b(?:a|the|lower|higher|smaller|larger|bigger|reduced?|your|their|its|same)\s*$", re.I)
CODE_CORE_COUNT_RE = re.compile(r"cpu_count|\bnproc\b|num_cpus|cpus_allowed|available_cpus|hardware_concurrency"
                                r"|\$\{?\w*(?:cores|cpus|procs|jobs)\b", re.I)  # "`$NIX_BUILD_CORES`"


# A command that throws the kept work away, in code: "`make clean && make -j 4`", "`rm -rf build && cmake …`".
CODE_CLEAN_RE = re.compile(r"\b(?:make (?:dist)?clean|ninja -t clean|cargo clean|git clean -[a-z]*x[a-z]*|distclean"
                           r"|mrproper)\b|\brm -rf \S*build\S*", re.I)


# A look's own tool, with whatever options: "`nvidia-smi --query-gpu …`", "`watch -n1 nvidia-smi`", "`free -g`".
CODE_LOOK_RE = re.compile(r"^\s*(?:sudo\s+)?(?:watch\s+(?:-n\s*[\d.]+\s+)?)?(?P<tool>nvidia-smi|nvtop|gpustat|free|df"
                          r"|htop|vmstat|top|ps(?= (?:aux|-ef|-eo|axu)))\b", re.I)
CODE_INSTALL_RE = re.compile(r"\s*(?:uv\s+)?pip3?\s+(?:install|wheel)(?:\s+-[\w-]+(?:[= ]\S+)?)*?\s+"
                             r"(?P<name>[A-Za-z][\w.-]{1,40})(?:[=<>~!]=?[\w.*]+)?(?:\s+-[\w-]+(?:=\S+)?)*\s*")
GPU_RESET_CODE_RE = re.compile(r"\bnvidia-smi\b.*(?:\s-r\b|--gpu-reset\b)", re.I)
# What rigops is asked for now and then and never does: reboot a host, power-cycle it, reset its GPUs. Asked as a
# request ("please reboot HOST", "can you reset the gpus?"), or told and then asked for ("HOST needs a cold reboot,
# can you do it?"); not told ("it crashed (hard reboot, no clean shutdown)").
_CANNOT = (r"(?:(?:a |an )?(?:cold |hard |warm )?re-?boot|power[- ]?cycle|reset (?:the |its |all |HOST's )?"
           r"(?:gpus?|cards?|gpu \d)|gpu reset|reset the (?:box|machine|node|host|HOST)"
           r"|drain (?:the )?(?:HOST|node|host|box|machine))\b")
CANNOT_DO_RE = re.compile(
    r"(?:^|(?<=[.?!;,:\n\x01]) ?)(?:(?:please|pls|plz|just|can you|could you|would you|will you|can u|go ahead and"
    r"|i need you to)"
    rf" )*(?P<what>{_CANNOT})"
    rf"|\b(?P<told>{_CANNOT})(?=[^.?!\n]{{0,40}}\b(?:can|could|would) (?:you|u) (?:do|handle) (?:it|that|this)\b)")
_CODE_LOOK = {"nvidia-smi": "nvidia-smi", "nvtop": "nvidia-smi", "gpustat": "nvidia-smi", "free": "free -h",
              "htop": "free -h", "vmstat": "free -h", "df": "df -h", "top": "free -h", "ps": "free -h"}


CODE_BOT_COMMAND_RE = re.compile(r"\s*/(?:re-?test|test|rerun(?:-ci)?|retry|rebuild|restart|tag-and-rerun-ci)\s*", re.I)


# A kill by name in code: "`pkill -9 -f 'flash-attn'` on HOST" (not "`pkill python`": no build's name).
CODE_KILL_BY_NAME_RE = re.compile(r"\s*(?:sudo\s+)?(?:pkill|killall)(?:\s+-[\w-]+)*\s+['\"]?"
                                  r"(?P<name>[A-Za-z][\w.+-]{1,40})['\"]?\s*")


def _inline_code(m: re.Match[str]) -> str:
    if CODE_BOT_COMMAND_RE.fullmatch(m.group(1)):
        return " rebuild "  # "`/retest` X": a CI bot's command, the rebuild it asks for
    if (killed := CODE_KILL_BY_NAME_RE.fullmatch(m.group(1))) and killed.group("name").lower() not in NOT_A_BUILD:
        return f" kill {killed.group('name')} "  # the build's name, or one the config does not have (refused)
    if GPU_RESET_CODE_RE.search(m.group(1)):
        return " reset the gpus "  # "`nvidia-smi -r`": no look, what rigops never does
    if install := CODE_INSTALL_RE.fullmatch(m.group(1)):
        return f" the {install.group('name').lower()} install "  # "kill `pip install xformers`": what is installed
    if re.fullmatch(r"\s*(?:sudo\s+)?(?:cat|head(?:\s+-n?\s*\d+)?|grep\s+-?[\w:-]+)\s+/proc/meminfo\s*", m.group(1)):
        return " free -h "  # "`grep MemAvailable /proc/meminfo`": the memory, as the kernel tells it
    if (look := CODE_LOOK_RE.match(m.group(1))) and not CODE_JOBS_IN_RE.search(m.group(1)):
        return f" {_CODE_LOOK[look.group('tool').lower()]} "
    if CODE_CLEAN_RE.search(m.group(1)):
        return " clean rebuild " + _inline_code_jobs(m).strip() + " "
    return _inline_code_jobs(m)


# The jobs setting named in code, without its value: "run X with `max-jobs` set to 1", "`MAX_JOBS` to 4".
CODE_JOBS_NAME_RE = re.compile(r"\s*(?:-{0,2}max[-_]?jobs|cmake_build_parallel_level|make_jobs|-{2}jobs)\s*", re.I)


def _inline_code_jobs(m: re.Match[str]) -> str:
    inner = m.group(1)
    if CODE_JOBS_NAME_RE.fullmatch(inner):
        return " max_jobs "
    if CODE_BARE_J_RE.fullmatch(inner):  # "a lower `-j`": the flag named, not given
        return " jobs " if _FLAG_NAMED_RE.search(m.string[max(0, m.start() - 16): m.start()]) else " -j (no number) "
    if (CODE_JOBS_RE.fullmatch(inner) or CODE_COMMAND_RE.fullmatch(inner) or CODE_LINES_RE.fullmatch(inner)
            or CODE_BUTTON_RE.fullmatch(inner)):
        return f" {inner} "
    if found := CODE_JOBS_IN_RE.search(inner):
        said = re.sub(r'"(\w+)"\s*:\s*', r"\1=", found.group(0))  # `"jobs": 0` is jobs=0
        if re.fullmatch(r"[\w-]+\s*=\s*[a-z_<>{}\[\].]+", said, re.I):
            return f" {said.split('=')[0].strip()}=$expr "  # `MAX_JOBS=X`, `MAX_JOBS=<n>`: no count said
        return f" {said} "
    if JOBS_EXPR_RE.search(inner.lower()) or re.fullmatch(r"\s*\$?\(?nproc\)?\s*", inner) or (
            CODE_CORE_COUNT_RE.search(inner)):
        return " $expr "  # "`nproc` jobs", "`$(nproc)/2`": what the count is said as
    if CODE_AFTER_JOBS_WORD_RE.search(m.string[max(0, m.start() - 12): m.start()]) and not inner.strip().isdigit():
        return " $expr "
    if inner.strip().isdigit() and len(inner.strip()) <= 4:
        return f" {inner.strip()} "  # "drop vllm to `4`": a number in code is the number
    if CODE_NAME_RE.fullmatch(inner):
        return f" {inner.strip()} "  # "kill `tensorrt-llm` on HOST": a name in code is still the name said
    if _RUN_BEFORE_RE.search(m.string[max(0, m.start() - 16): m.start()]) and not _BUILD_COMMAND_RE.match(inner):
        return " some-command "  # "run `uptime` on HOST": a command rigops does not run, never "run on HOST"
    return " "


_BUILD_COMMAND_RE = re.compile(r"\s*(?:sudo\s+)?(?:[A-Z_]+=\S*\s+)*(?:uv\s+)?(?:pip3?|python3?\s+(?:-m\s+pip|setup\.py)"
                               r"|make|gmake|ninja|cmake|cargo|bazel|meson|npm|yarn|docker\s+build|colcon|\./build)\b")
_RUN_BEFORE_RE = re.compile(r"(?:run|execute|exec|type|do|try|issue)(?: an?| the)?\s*$", re.I)


# The words that introduce pasted output: "free -m on HOST gives:", "when I run nvidia-smi it shows:", "tail of the
# console output from BUILD:" right before a code block. They tell what the output is, they ask for nothing, so
# they are not read as a request (a request earlier on the line stays: "kill it, here's what it printed:").
PASTE_INTRO_RE = re.compile(
    r"(?:^|(?<=[\n.;!?]))(?P<intro>[^\n.;!?]*?(?:\s(?:gives|gave|shows|showed|says|said|prints|printed|outputs|output|returns|returned"
    r"|reports|reported|displays|displayed|looks like|produces|produced|is|was|are|were|got|get|see|saw)\s*:?|:"
    # "… unable to build. see the log", "here's the output", "log below"
    r"|\s(?:see|here(?:'s| is)|attached|below is)(?: the| my| this| its)? (?:full )?(?:build )?(?:log|output|error"
    r"|trace|traceback|stack ?trace)(?: below)?\s*:?"
    # "get following error message on HOST", "got the following"
    r"|\s(?:get|got|getting|see|seeing|saw)(?: the)? following(?: [^\n.;!?`]{0,40})?\s*:?))"
    r"(?P<gap>\s*\n?\s*)(?=```)",
    re.I,
)
_ASKS_FIRST_RE = re.compile(r"^\W*(?:<@\w+>\s*)?(?:please |pls |can you |could you )?(?:kill|stop|abort|cancel"
                            r"|rebuild|restart|retry|rerun|show|post|tail|check|give|get|run|grab|fetch|send|look)\b"
                            r"(?! of\b)(?! (?:the )?following\b)", re.I)


PASTE_MARK = "\x02"  # opens a clause that introduces pasted output (its names still count)


def _paste_intro(m: re.Match[str]) -> str:
    head, sep, last = m.group("intro").rpartition(",")
    if _ASKS_FIRST_RE.match(last):
        return m.group(0)
    return f"{head}{sep} {PASTE_MARK}{last.strip()}{m.group('gap')}"


@dataclass(frozen=True)
class Normal:
    """A message in the neutral form the rules read: ``text`` what it says, ``quoted`` what its quote lines
    say (context that may name the host or build, never a request)."""

    text: str
    quoted: str = ""


def normalise(text: str) -> str:
    """Chat text → plain lower-case text with markup, code, quotes, URLs and emoji removed."""
    return normalise_parts(text).text


def normalise_parts(text: str) -> Normal:
    s = unicodedata.normalize("NFKC", text[:MAX_RAW]).translate(_CHAR_MAP)
    s = PASTE_INTRO_RE.sub(_paste_intro, s) if "```" in s else s
    s = CODE_BLOCK_RE.sub(_code_block, s)
    s = INLINE_CODE_RE.sub(_inline_code, s)
    s = re.sub(r"(?<=\d)\s?\*\*\s?(?=\d)", "^", s)  # "2**4 jobs": a power, not the asterisks of bold
    s = STRIKE_RE.sub(" ", s)
    s = MENTION_RE.sub(_mention, s)  # "… limitation <@U0RIGOPS> retry at 2": a mention starts what is said to it
    s = SLACK_MARKUP_RE.sub(" ", s)  # channels, specials and links (label too) carry no intent
    for entity, char in ENTITIES:
        s = s.replace(entity, char)
    s = PLACEHOLDER_RE.sub(" $expr ", s)
    quoted = " \n ".join(m.group(0).lstrip(" >") for m in QUOTED_LINE_RE.finditer(s))
    s = QUOTED_LINE_RE.sub(" ", s)
    s = _unwrap_quotes(s.strip())
    # -j "$(nproc)": the count, not a quotation; "-j `nproc`" in quotes: the jobs flag as said
    s = QUOTED_SPAN_RE.sub(_quoted_span, QUOTED_COUNT_RE.sub(r"\1\2", s))
    return Normal(_plain(s), _plain(quoted) if quoted else "")


QUOTED_JOBS_RE = re.compile(r"\s*-{1,2}j(?:obs)?\s*=?\s*(?:\d{1,4}|\$expr|\$\(\s*nproc\s*\))\s*", re.I)


def _quoted_span(m: re.Match[str]) -> str:
    inner = m.group(0)[1:-1]
    if QUOTED_JOBS_RE.fullmatch(inner) or CODE_JOBS_RE.fullmatch(inner):
        return f" {inner} "
    if re.match(r"\s*-{1,2}j(?:obs)?\s*=?\s*\$", inner):
        return " -j $expr "  # MAKEFLAGS="-j$(($(nproc) * 2))": the count as a formula
    # a formula of the machine's size in quotes where a count goes: 'set the jobs to "cores - 2"'
    return " $expr " if QUOTED_FORMULA_RE.fullmatch(inner) else " "


QUOTED_FORMULA_RE = re.compile(r"\s*(?:(?:number of |#)?(?:cores|cpus|threads|nproc|processors|ram|memory)\s*"
                               r"(?:[-+*/×]|minus|plus|times|divided by)\s*\d{1,4}(?:\s*gb)?"
                               r"|\d{1,4}\s*(?:[*/×]|x|times)\s*(?:cores|cpus|threads|nproc))\s*", re.I)


NOT_THIS_ONE_RE = re.compile(r"\(\s*not (?!(?:yet|now|sure|working|needed)\b)[^()\n]{1,40}\)")


def _plain(s: str) -> str:
    s = NOT_THIS_ONE_RE.sub(" ", URL_RE.sub(" ", s).lower())  # "the memory (not video memory)": which, no negation
    s = THUMBS_UP_TO_RE.sub("+1 ", s)  # "👍 to bump the timeout and get X built": a vote, not the request itself
    s = EMOJI_RE.sub(" \n ", s)  # an emoji ends what was said before it ("… at 100% :scream: stop vllm")
    s = REPEATED_RE.sub(r"\1", s)  # "kill it kill it kill it"
    s = EMPHASIS_RE.sub(" ", TIMES_RE.sub(" × ", s))
    for pattern, repl in TYPO_FIXES:
        s = pattern.sub(repl, s)
    s = COMMA_GLUED_RE.sub(", ", s)  # "enough to do this job,but please show …" (a full-width comma, NFKC'd)
    s = COURTESY_IF_RE.sub(" please", s)  # "rebuild X at 8 if possible": a courtesy, no condition
    return canonical_numbers(SPACES_RE.sub(" ", s)[:MAX_SCAN])


# A condition that is only a courtesy: "rebuild X at 8 if possible", "… if you can", "… when you get a chance"
# (never "if you can't …", "if it fails", "when it is done": those say when).
COURTESY_IF_RE = re.compile(
    r",?\s*\b(?:if (?:at all )?possible|if poss|(?:if|when) (?:you|u|ya) (?:can|could)(?!'t|\s*not|n't)(?! \w)"
    r"|if (?:that's|that is|it's|it is) (?:ok|okay|alright|fine|not too much (?:trouble|hassle|to ask))"
    r"|if you don't mind|if you get a (?:chance|sec|second|minute|moment)"
    r"|when(?:ever)? you (?:get|have) a (?:chance|sec|second|minute|moment)|whenever you can|when possible"
    r"|at your (?:earliest )?convenience"
    # "kill X if it's running.": what a kill of it means anyway (not "if it's still running at 5")
    r"|if (?:it's|it is|its|that's|that is|BUILD is) (?:still )?(?:running|going|up|alive)(?=\s*(?:[.!,;]|$))"
    r"|if (?:still )?running(?=\s*(?:[.!,;]|$)))\b")


def _unwrap_quotes(s: str) -> str:
    """A message that is one quoted string is taken as its content ("oom-ing, try -j20")."""
    if len(s) >= 2 and s[0] == s[-1] == '"' and '"' not in s[1:-1]:
        return s[1:-1]
    return s


# --- clauses -------------------------------------------------------------------------------------------

CLAUSE_SPLIT_RE = re.compile(
    r":[ \t]*\n|[\n;!]+|[.,:](?=\s|$)|\s(?:and then|then|and|but|plus|&&|&|or|\+|/|-+>|=>|→)\s|\s-+\s|\s\|\s"
    r"|\s\.\.\.+"
    r"|(?<!\bi)(?<!\bwe)(?<!\byou)(?<!\bit)(?<!\bthey)(?<!\bhe)(?<!\bshe)(?<!\bcould)(?<!\bcan)(?<!\bmight)"
    r"(?<!\bmay)(?<!\bshould)(?<!\bwould)(?<!\bwill)\salso\s"  # not "I also see …", "you could also try …"
    # a request after a remark, its quote gone: "it endlessly displays "[29/30] …" can you end the process?"
    r"|(?<!\bif)(?<!\bwhether)(?<!\bhow)(?<!\bwhat)(?<!\bwhy)(?<!\bwhen)(?<!\bwhere)(?<!\bwho)(?<!\band)(?<!\bso)"
    r"(?<!\bbut)(?<!\bthen)\s(?=(?:can|could|would|will) (?:you|u|someone|somebody|anyone)\b)"
    # "we may be overloading the CPU so let's reduce …": the request after the remark is a clause of its own
    r"|\sso (?=(?:let's|lets|let us|please|pls|can you|could you|would you|i need you to|we need to|just)\b)"
)
MINE_TO_DO = (r"(?:kill|stop|abort|cancel|rebuild|restart|retrigger|re-trigger|rerun|re-run|retry|relaunch|nuke"
               r"|terminate|trigger|build|compile)")
# Lead-ins that keep a clause imperative: "pls", "can you", "let's", "we should", "@rigops" (already gone).
LEAD_RE = re.compile(
    r"^(?:(?:(?:is )?(?:anyone|anybody|someone|somebody) (?:able|around|free|willing|available) to"
    r"|(?:anyone|anybody|someone|somebody) with (?:rights|access|sudo|root|perms|permissions|the rights)"
    r"|i mean|i meant|that is|i\.e\.?|in other words"
    r"|hey|hi|hello|yo|ok|okay|k|so|and|also|then|now|please|just|quick|quickly|maybe|right|alright|actually"
    r"|first(?: of all| off)?(?! (?:time|thing|try|run|build|attempt|one)\b)|firstly|after that|afterwards|finally"
    r"|at least(?= (?:try|do|run|rebuild|restart|kill|stop|show|check|give)\b)"
    r"|lastly"
    r"|rigops|bot|guys|folks|team|ya|yeah|yep|yes|ugh|hmm+|lol|damn|welp|oof"
    # "someone kill it", never "someone is hammering the gpu" (who does what, told)
    r"|(?:someone|somebody|anyone|anybody)(?! (?:is|was|has|had|keeps|kept|just|already|else|seems|must|might|may"
    r"|will|won't|would|could|should|did|didn't|does|doesn't|knows|knew|here|there|[a-z]+ed|[a-z]+ing)\b)"
    r"|can you|could you|can u|could u|would you|will you|(?:can|could|would|will) (?:someone|somebody|anyone|anybody)"
    r"|can we|could we|let's|lets|let us|go ahead and|we need to|need to|we should|you should"
    r"|i need you to|i'd like you to|i want you to|time to|gotta|we gotta|better|kindly|pretty please"
    r"|ok let's|how about we|why don't we|why don't you|perhaps|can we|could we|mind"
    # "can i get the log": asked; "can i just rebuild X?": whether the speaker may, or how (intents_acts.HOW_TO_RE)
    rf"|(?:can|could|may) i(?! (?:just |simply |now |still |safely |go ahead and )?{MINE_TO_DO}\b)"
    r"|(?:try|see) (?:if|whether) it helps (?:to|if you|if we)|(?:it's |it is |probably )?(?:best|better) to"
    r"|might as well|may as well"
    r"|would you mind|do you mind|i'd like to|i want to|i wanna|make sure to|be sure to|remember to)\b[\s,]*)*+"
)
_CLAUSE_EDGES = " '\"()[]{}<>"
# Lead-ins that are only noise: the clause they open is not made a request by them.
FILLER_LEADS = frozenset((
    "hey", "hi", "hello", "yo", "ok", "okay", "k", "so", "and", "also", "then", "now", "right", "alright",
    "rigops", "bot", "guys", "folks", "team", "ya", "yeah", "yep", "yes", "ugh", "lol", "damn", "welp", "oof",
    "maybe", "actually", "first", "firstly", "of", "all", "off", "after", "that", "afterwards", "finally", "lastly",
    "at", "least",
))
HEDGES = frozenset(("maybe", "perhaps"))
LEAD_MARK = "\x01"  # opens a clause whose lead-in made it a request ("can you", "pls", "let's")


def split_clauses(text: str) -> list[str]:
    """The clauses of a message, each without its lead-in words ("pls", "can you"); a clause whose lead-in
    asks for something starts with ``LEAD_MARK``."""
    return [c.body for c in clauses(text)]


@dataclass(frozen=True)
class Clause:
    body: str
    joined: str  # how it hangs on the clause before: "" (a new sentence), "," (a comma, colon or dash), "and"
    question: bool = False  # it ended with a question mark


_JOINED_BY = {",": ",", ":": ",", "and": "and", "and then": "and", "then": "and", "or": "and", "but": ",",
              "also": ",", "plus": "and", "&": "and", "&&": "and", "+": "and", "/": "and", "->": "and", "-->": "and",
              "=>": "and", "→": "and"}  # "go to the build dir -> delete it -> rebuild": steps in order


def clauses(text: str) -> list[Clause]:
    """The clauses of a message, with how each one is joined to the one before (a supposition or a story
    carries over "and" and, for a supposition, over a comma; a new sentence starts afresh)."""
    out: list[Clause] = []
    pieces = CLAUSE_SPLIT_RE.split(text)
    seps = [m.group(0).strip() for m in CLAUSE_SPLIT_RE.finditer(text)]
    for i, part in enumerate(pieces):
        sep = seps[i - 1] if i else ""
        joined = _JOINED_BY.get(sep, "," if sep.startswith("-") or sep == "|" else "")
        bits = part.split("?")
        for k, bit in enumerate(bits):
            stripped = bit.strip(_CLAUSE_EDGES).rstrip(".…").rstrip(_CLAUSE_EDGES)  # "run it..." trails off
            lead = LEAD_RE.match(stripped)
            body = stripped[lead.end():].strip(_CLAUSE_EDGES) if lead else stripped
            if body:
                words = set(re.findall(r"[a-z']+", lead.group(0))) if lead else set()
                if "should" in words and (words & HEDGES or body.startswith(("probably ", "eventually "))):
                    body, words = "we should " + body, set()  # "so maybe we should use 1 thread?": a musing
                out.append(Clause(LEAD_MARK + body if words - FILLER_LEADS else body, joined if k == 0 else "",
                                  question=k < len(bits) - 1))
    for i in range(len(out) - 1, 0, -1):  # "still alive or dead?": the question is the whole of it
        if out[i].question and out[i].joined == "and" and not out[i - 1].question:
            out[i - 1] = replace(out[i - 1], question=True)
    return out


# --- guards --------------------------------------------------------------------------------------------

# A clause about the past, the future or habits is a story, not a request ("the build failed yesterday").
# What a delay is not after: "kill it before HOST dies in 10 min" asks now; the delay is the trouble's.
BEFORE_A_DELAY = (r"(?<!dies )(?<!die )(?<!dead )(?<!full )(?<!down )(?<!ooms )(?<!oom )(?<!crashes )(?<!gone )"
                  r"(?<!over )")
NARRATIVE_RE = re.compile(
    r"\b(?:yesterday|ago|earlier|the other day|used to|back then|back when|usually|always|normally|sometimes"
    r"|often|routinely|occasionally|frequently|every time|most of the time"
    r"|typically|fixed|resolved|solved|no longer|anymore|tomorrow|later|tonight|next (?:week|time)"
    r"|last (?:night|week|time|month|year|run|friday|monday|tuesday|wednesday|thursday|saturday|sunday)"
    r"|i'll|we'll|i will|we will|(?:gonna|going to)(?! need (?:you|u|someone|somebody|rigops) to\b)"
    r"|let me|ran(?! out)|i've run|we've run|is what (?:i|we) (?:ran|did|used)"
    # what worked, told as the fix: "what worked for us was: …", "the usual fix is …"
    r"|what (?:worked|fixed it|helped|did it|did the trick)|the (?:usual |quick |real |only )?(?:fix|trick|workaround"
    r"|solution) (?:is|was|that worked)"
    rf"|{BEFORE_A_DELAY}in (?:a few|\d+) (?:min|mins|minutes|hours?|h|secs?|seconds))\b"
)
# What a thing is made to do, told about it: "the rebuild script is supposed to cap it at 8".
DESCRIPTION_RE = re.compile(
    r"\b(?:is|are|was|were|'s|it's|gets|got|has been|have been) (?:supposed|meant|configured|designed|expected"
    r"|set up|hardcoded|hard-coded|programmed|written) to\b"
)
# Negated destructive requests ("don't kill it", "no need to rebuild").
NEGATIONS = r"don't|dont|do not|never|no need|not|nope|cannot|can't|cant|shouldn't|mustn't|won't|wouldn't"
NEGATION_RE = re.compile(rf"\b(?:{NEGATIONS}|avoid|without|stop (?:killing|rebuilding|restarting|retrying))\b")
# How a wish is put: "it would be nice …", "it'd be really helpful …".
_NICE = r"(?:really |very |so |super )?(?:nice|great|good|awesome|helpful|cool|handy|lovely|ideal|useful|appreciated)"
# Said to the bot, "should we kill it?" asks it to: this lead-in is dropped when the bot is addressed.
ASKED_LEAD_RE = re.compile(r"^(?:should (?:we|i|you)|shall (?:we|i)|do you want to|wanna|want to"
                           r"|you (?:need to|have to|must|gotta|got to|should)"
                           r"|(?:(?:would|could|can|will) you )?(?:be so kind as to|be kind enough to|kindly)"
                           # a wish or a way put to rigops asks it: "is there a way to get the log?", "any way to kill
                           # this?",
                           # "would be nice if you could show the tail", "the easy way would be to rebuild …"
                           r"|(?:is there|there is|any) (?:a |an |some )?(?:way|option|command|chance) (?:for you )?to"
                           r"(?![^?.]*\b(?:myself|ourselves|by hand|manually"
                           r"|from the (?:terminal|shell|command line|cli)))"
                           r"(?= (?:get|see|show|view|check"
                           r"|print|display|pull|fetch|tail|read|look|post|dump|grab|share"
                           r"|(?:kill|stop|cancel|abort|terminate|restart|rebuild|rerun|retry)"
                           r" (?:it|this|that|them|BUILD|the BUILD build|the build on HOST"
                           r"|the (?:running|current|stuck|hung) (?:build|compile)))\b)"
                           r"|(?:can|could) you (?:find a way|manage) to"
                           # a hope or a wonder: "any chance you could rerun X", "wondering if you could stop X",
                           # "I was hoping you could post …", "I'd love to see …", "feel free to restart X"
                           r"|(?:is there )?any chance (?:you (?:could|can|would|might)|to|of)"
                           r"|(?:i was |i'm |i am |we were |we're |we are |just )?(?:wondering|hoping)"
                           r" (?:if |whether )?(?:you|u) (?:could|can|would|might|will)"
                           r"|(?:i|we)(?: would|'d) (?:love|appreciate it if you (?:could|would))(?: (?:you )?to)?"
                           r"|(?:please |pls )?feel free to"
                           # a wish said to rigops: "we actually want to rebuild X", "I need to see the log"
                           r"|(?:we|i) (?:actually |really |just |now |also )?(?:want|need|would like|'d like)"
                           r" (?:you )?to(?= (?:rebuild|restart|rerun|retry|kill|stop|cancel|see|get|check|view"
                           r"|know|look|show)\b)"
                           # a proposal put to rigops: "what if you run X single-threaded (-j1)?"
                           r"|(?:what if|how about(?: if)?) you(?: will| would| could| just| try to| tried to)?"
                           r"(?! run out)(?= (?:run|rebuild|restart|retry|kill|stop|build|try|use|drop|lower)\b)"
                           r"|(?:is it|would it be|will it be|is that) possible (?:for you )?to"
                           # "it'd be great to see that output", "that would be helpful to get the log"
                           rf"|(?:(?:it|that)(?:'d| would| will)|would|will|'d) be {_NICE} (?:if you (?:could|can"
                           r"|would)|if we(?:'d| could| can| would)|to)"
                           r"|(?:the |your )?(?:easy|easiest|simple|simplest|quick|quickest|fast|fastest|best|safest)"
                           r" (?:way|thing|fix|option|bet|move) (?:here )?(?:would be|is|will be) (?:to|if you)"
                           r"|(?:i'm |im |we're |i am |we are )?(?:gonna|going to) need (?:you|u) to)"
                           r"(?: just)? ")
# Said to rigops, a request put indirectly asks all the same, in words that must be put back as the verb: a
# suggestion ("I suggest killing X", "I suggest we cancel X"), what is needed done to a build ("I need X rebuilt with
# 4 jobs", "we need X restarted at -j8"), a wish in the past tense ("would be nice if you posted the log").
# ``as_asked`` gives the plain request; a lead-in that only goes ("any chance you could …") is ASKED_LEAD_RE's.
_GERUNDS = {"killing": "kill", "cancelling": "cancel", "canceling": "cancel", "stopping": "stop",
            "aborting": "abort", "terminating": "terminate", "restarting": "restart", "rebuilding": "rebuild",
            "rerunning": "rerun", "retrying": "retry", "relaunching": "relaunch", "checking": "check",
            "showing": "show", "posting": "post", "tailing": "tail", "pulling": "pull", "getting": "get",
            "trying": "try", "dropping": "drop", "lowering": "lower", "reducing": "reduce", "running": "run",
            "looking at": "look at"}
_SUGGEST_RE = re.compile(
    r"^(?:i |we )?(?:(?:would |'d )?(?:suggest|propose|recommend))(?: that)?(?: (?:we|you|u|rigops))?"
    r"(?: (?:just|now|go ahead and))? (?=(?:" + "|".join(_GERUNDS) + r"|kill|cancel|stop|abort|terminate|restart"
    r"|rebuild|rerun|retry|relaunch)\b)")
_PARTICIPLES = {"rebuilt": "rebuild", "restarted": "restart", "rerun": "rerun", "retried": "retry",
                "relaunched": "relaunch", "recompiled": "recompile", "killed": "kill", "stopped": "stop",
                "cancelled": "cancel", "canceled": "cancel", "aborted": "abort"}
_NEEDED_DONE_RE = re.compile(
    r"^(?:i |we )?(?:need|want|would like|'d like) (?P<what>(?:the )?(?:BUILD|it|HOST's build)(?: build)?"
    r"(?: on HOST)?) (?P<done>" + "|".join(_PARTICIPLES) + r")\b")


# "(it) would be nice if you posted the X log", "I'd appreciate it if you killed X": a wish in the past tense
_PAST_ASKED = {"posted": "post", "showed": "show", "shared": "share", "sent": "send", "pulled": "pull",
               "grabbed": "grab", "checked": "check", "killed": "kill", "stopped": "stop", "cancelled": "cancel",
               "canceled": "cancel", "aborted": "abort", "restarted": "restart", "reran": "rerun", "rebuilt": "rebuild",
               "retried": "retry", "relaunched": "relaunch", "tailed": "tail", "gave": "give", "dumped": "dump"}
_WISHED_RE = re.compile(
    rf"^(?:(?:it )?(?:would|'d) be {_NICE}|(?:i|we)(?: would|'d) (?:appreciate it|be grateful|love it|like it)) if you"
    r"(?: could| would)?(?: just)? (?P<past>" + "|".join(_PAST_ASKED) + r")\b")


# Said to rigops, "you could also try X at 4", "maybe you can try X with jobs=1", "you might want to try X": a
# request put softly (never "you could kill it but …": only the trying is asked).
_TRY_ASKED_RE = re.compile(r"^(?:(?:maybe|perhaps) )?you (?:could|can|might|may)(?: (?:also|just|maybe|perhaps))?"
                           # ... or a count changed: "you could reduce it from 4 to 2 and see if that helps"
                           r"(?: want to)? (?=try\b|(?:reduce|lower|drop|cut|decrease|limit|bump|raise|increase)"
                           r" (?:it|BUILD|the jobs|its jobs|-j|max_jobs)\b[^.;?!]*\d)")


# Said to rigops, what the speaker would like shown: "I'd like the last 60 lines of the X log", "we'd love the gpu
# usage on HOST" (never "I'd like to stop it myself": the speaker's to do; "I'd like X fixed": a wish).
_LIKE_SHOWN_RE = re.compile(r"^(?:i|we)(?:'d| would) (?:like|love|appreciate) (?=(?:the|a|an|some|all|BUILD's|HOST's)"
                            r" (?:[\w'-]+ ){0,4}(?:logs?|lines|output|memory|mem|ram|swap|gpus?|status|progress"
                            r"|usage)\b(?!.* (?:fixed|solved|resolved|gone|removed|improved|changed|sorted)\b))")


def as_asked(clause: str) -> str | None:
    """The plain request a clause said to rigops puts indirectly; None when it puts none."""
    if m := _TRY_ASKED_RE.match(clause):
        return clause[m.end():]
    if m := _LIKE_SHOWN_RE.match(clause):
        return "show " + clause[m.end():]
    if m := _WISHED_RE.match(clause):
        return _PAST_ASKED[m.group("past")] + clause[m.end():]
    if m := _SUGGEST_RE.match(clause):
        rest = clause[m.end():]
        for gerund, verb in _GERUNDS.items():
            if rest.startswith(gerund + " ") or rest == gerund:
                return verb + rest[len(gerund):]
        return rest
    if m := _NEEDED_DONE_RE.match(clause):
        return f"{_PARTICIPLES[m.group('done')]} {m.group('what')}{clause[m.end():]}"
    return None


# Where a request's reason or purpose begins: "stop it as it waits for an input that can't be given". What
# follows says why, and its tenses and negations are not the request's ("… so it doesn't come back later").
# Conditions ("if", "unless", "when") are not reasons: "rebuild at 8 if it fails" stays a supposition.
REASON_RE = re.compile(
    r"\s(?:so that|so it|so we|so the|so a|so an|so this|so our|so my|so they|so BUILD|because|'cause|cause it|since it"
    r"|since the|as it|as they|as the|as we|now that"
    r"|which|otherwise|or else|before it|before the|to avoid|to prevent|to stop it|in (?:the )?hopes?|hoping"
    r"|in order to|to see if|to (?:be sure|make sure|ensure|check|confirm|verify) (?:that |it|the|we|there|no)"
    r"|so (?:there|nothing|no)\b)\b"
)
# A choice put to the channel, not a request: "stop and try again or let it continue?"
ALTERNATIVES_RE = re.compile(r"\bor (?:let it|leave it|wait|keep it|just wait|not|should (?:i|we))\b")
# Deliberation between people, in plain (unaddressed) messages: "should we kill it?", "if it ooms, ...".
DELIBERATION_RE = re.compile(
    r"\b(?:will|would|might|should|shall|did|does|wonder|if|unless|whether|do you think|i'd|we'd|you'd"
    r"|have (?:you|we|they) (?:tried|used))\b|'ll\b"
)

# --- memory trouble ------------------------------------------------------------------------------------

GPU_OOM_RE = re.compile(
    r"\bcuda(?: error)?:? out of memory\b|\b(?:cuda|gpu|vram) oom\b"
    r"|\boom(?:ing|ed)? on (?:the )?gpus?(?![\w-])"
    r"|\b(?:gpu|vram) (?:is )?out of memory\b|\b(?:torch\.cuda\.)?outofmemoryerror\b"
)
TROUBLE_RE = re.compile(
    r"\boom(?:[-']?(?:ing|in|ed|d|s))?\b(?![ -]killer)"
    r"|\boom[ -]killer(?:$| (?:got|gets|killed|kills|killing|hit|hits|took|takes|reaped|kicked|kicks"
    r"|fired|fires|struck|strikes|is|'s|came|went|again|woke|invoked|on|going|just|keeps))"
    r"|\b(?:hit|triggered|invoked|woke|by) (?:by )?(?:the )?oom[ -]?killer"
    r"|\boom-?killer (?:took out|took down|got|killed|reaped|ate|shot)\b"
    r"|\bout of (?:mem|memory|ram|swap)\b|\blow on (?:mem|memory|ram)\b"
    r"|\b(?:swapping|thrashing)\b(?! (?:out|in|the|a|an|my|our|to|with|over|between|gpus?|cards?|them|it))"
    r"|\bswap(?:'s| is)? (?:full|maxed|exhausted|at 100)"
    r"|\b(?:mem|memory|ram)(?:'s| is)? (?:full|maxed(?: out)?|exhausted|gone|pegged|blowing up|exploding)\b"
    r"|\b(?:eating|eats|eat|ate|using|uses|hogging|hogs|chewing through) (?:up )?all (?:the |of the )?(?:mem|memory"
    r"|ram|swap)\b"
    r"|\bmemory pressure\b|\bcannot allocate memory\b|\bbad_alloc\b|\benomem\b"
    r"|\bkilled signal terminated program\b|\b(?:died|killed|terminated)(?: due to| by| with)? signal 9\b"
    r"|\binternal compiler error: killed\b|\bkilled \(program (?:cc1plus|cc1|lto1|cicc|ptxas)\)"
    r"|\b(?:cc1plus|cc1|cicc|nvcc|ptxas|compilers?|gcc|g\+\+|clang|linker|the build|BUILD)(?:'s)?"
    r" (?:got |gets |was |were |is getting |keeps getting |getting |are getting |being )?"
    r"(?:killed|oom[- ]?killed|sigkilled|reaped)\b"
    r"|\b(?:box|machine|host|node|server|system|HOST)(?:'s| is) (?:dying|unresponsive|frozen|crawling|melting"
    r"|on fire|choking|struggling|falling over|locking up)\b"
)

# --- actions -------------------------------------------------------------------------------------------

KILL_TARGET_RE = re.compile(
    r"\b(?:kill|stop|abort|cancel|halt|terminate|nuke|interrupt|sigkill|end)(?: -9)?"
    r"(?: (?:the|that|this|my|our|all|all the|those|these|every|any))?"
    r"(?: (?:running|current|stuck|runaway|hung|whole|damn|old|older|bad|broken|existing|in-progress|in progress"
    r"|ongoing|active|previous|earlier|pending|outdated|stale))?"
    r"(?: HOST(?:'s)?)?(?: BUILD)?"
    r" (?:build|builds|compile|compiles|compilation|compilers?|ninja|make|cmake|nvcc|cc1plus|cicc|ptxas|gcc"
    r"|jobs?|pip install|pip|install|processes|procs|everything|BUILD|it all|run|build job"
    r"|whatever(?: is| 's|'s)? (?:building|running|compiling))\b"
)
KILL_TOOL_RE = re.compile(r"^(?:pkill|killall|kill -9)\b"
                          # "shut X down", "take the X build down", "send SIGTERM to X"
                          r"|^(?:shut|take|bring) (?:BUILD|the BUILD build|the build|it|that|this)(?: on HOST)? down"
                          r"\b(?! (?:to|by|at|a notch|a bit)\b)"
                          r"|^send (?:a )?sig(?:term|kill|int) to (?:BUILD|the BUILD build|the build|it)\b")
_KILL_TAIL = (
    r"(?: (?:it|that|this|them|everything|all|now|asap|please|-9|again|already|right now|on HOST|HOST|real quick"
    r"|quickly|for me|thanks|thx|pls|plz|already|before (?:that|then|it's too late|the timeout(?: fires)?"
    r"|it times out)))*"
)
_FORCE = r"(?:(?:force|forcibly|hard)[- ]?)?"
KILL_PRONOUN_RE = re.compile(
    rf"^{_FORCE}(?:kill|abort|terminate|nuke)(?: (?:it|that|this|them|everything|HOST)){_KILL_TAIL}$"
)
KILL_WEAK_RE = re.compile(
    rf"^{_FORCE}(?:kill|abort|cancel|terminate|nuke|stop|halt|stop it|cancel it|halt it){_KILL_TAIL}$"
)

_REBUILD_TAIL = (
    r"(?: (?:it|that|this|everything|again|now|please|asap|the build|the compile|the thing|BUILD|on HOST|HOST"
    r"|from scratch|clean|the whole thing|the whole build|the whole lot|for me|real quick|quickly"
    r"|with that|with those|that way|like that|with that setting"
    # a count, not a time of day: "start over at 12 pls", "start over with 6", "at -j4", "at 8 jobs"
    r"|(?:at|with|using) -j ?\d{1,4}|(?:at|with|using) \d{1,4} (?:jobs|threads|cores|workers)"
    r"|(?:with|using) \d{1,4}|at \d{1,4}(?= please| pls| plz)|-j ?\d{1,4}))*"
)
REBUILD_OBJECT_RE = re.compile(
    r"^(?:rebuild|retry|rerun|restart|relaunch|start over|trigger|retrigger|re-trigger)"
    rf"(?: (?:it|that|this|the build|the compile|BUILD|HOST|on HOST|the whole thing|the whole build|everything"
    rf"|the whole lot|the lot|the job|the install|the BUILD (?:job|build|run|pipeline))){_REBUILD_TAIL}$"
)
REBUILD_BARE_RE = re.compile(rf"^(?:rebuild){_REBUILD_TAIL}$")
REBUILD_WEAK_RE = re.compile(
    r"^(?:retry|rerun|restart|relaunch|start over|again|go again|try again|try it again|run it again|once more"
    r"|one more time|(?:give it|have) another (?:go|try|shot)|kick it off again|(?:let's|lets) try again"
    r"|try (?:re)?(?:building|compiling)(?: it)? again"  # "… possibly from running out of RAM. try building again"
    r"|(?:(?:add|make|do|give it|have) )?(?:one more|another) (?:attempt|try|run|go|shot|round)"
    r"(?: (?:on|at|of|for|with) BUILD)?"
    r"|(?:launch|start|begin|kick off|spin up|make|build|trigger|fire off) (?:a )?(?:replacement|new one|fresh one"
    r"|new build|fresh build|new run)"
    r"|kick (?:the )?(?:broken |failed |stuck |dead |red )?(?:BUILD(?: build)?|build)"  # "kick broken X build"
    r"|(?:back off|fall back|go back|revert|switch) to (?:re-?building|a (?:full|clean) (?:re-?)?build)"
    r"(?: (?:everything|it|BUILD))?(?: from scratch)?"
    # "kill it and start again", "abort the current build and build the new one", "have everything rebuilt"
    r"|start (?:it |BUILD )?(?:again|over|anew|clean|fresh|from scratch)"
    r"|(?:build|start|launch) the (?:new|next|latest) one"
    r"|re-?trigger|recreate(?: the build)?|(?:have|get) (?:it|everything|BUILD|the build|the whole thing)"
    r" (?:rebuilt|re-?compiled|re-?built|compiled|built|(?:to )?(?:re-?)?(?:compile|build)"
    r"|(?:re-?)?(?:compiling|building))"
    r"|(?:force-)?(?:kill|stop|abort)-(?:and|n|&amp;)-(?:retry|restart|rerun|rebuild)"
    r"|(?:going to |gonna |will )?need (?:you )?to (?:retry|rerun|rebuild|restart)"
    r"|trigger (?:it|BUILD|the build)(?: manually| by hand| again)?(?: for now)?"
    rf"|(?:re-?)?run){_REBUILD_TAIL}$")
REBUILD_TARGET_RE = re.compile(
    r"\b(?:rebuild|retry|rerun|restart|relaunch|kick off|start|launch|re-?trigger|recompile|re-?compile|reinstall)"
    r"(?: (?:the|my|our))?(?: HOST(?:'s)?)?"
    # "rerun the failed vllm build", "restart the stuck BUILD"
    r"(?: (?:failed|failing|broken|stuck|crashed|dead|hung|wedged|last|previous|killed|oom-?killed|flaky|red))?"
    r" (?:build|compile|BUILD)\b"
    r"(?! (?:system|time|times|server|farm|cache|script|dir|directory|folder|button))"
)
# A rebuild asked for by its noun: "clean rebuild of BUILD", "do a fresh build of BUILD on HOST", "kick off a
# rebuild". Without a verb only with a word that makes it a request (clean, fresh, full), and then only ending the
# clause: "fresh build of BUILD failed again" tells, it does not ask.
_NOUN_END = (r"(?=(?: (?:on HOST|HOST|please|pls|plz|now|for now|asap|thanks|thx|for me|again|real quick"
             r"|at -?j?\d+|-j ?\d+|j\d+|with \d+ jobs))*$)")
_NOUN_OF = r"(?: (?:of|for) (?:BUILD|it|that|the build))?"
REBUILD_NOUN_RE = re.compile(
    r"^(?:(?:can you|could you|would you|please|pls|just|let's|lets|we need|i need|need|ok|so|then|and) )*"
    r"(?:(?:do|run|kick off|kick|trigger|re-?trigger|start|launch|fire off|queue|try|get|force"
    r"|give (?:it|us|me|BUILD)|time for|(?:we |i )?(?:need|want|could use)|(?:let's |lets )?have)"
    r" (?:a |an |one more |another )?(?:(?:new|clean|fresh|full|proper) )?(?:BUILD )?"
    r"(?:(?:clean|fresh|full|new|proper|from-scratch|scratch) )?"
    r"(?:(?:re)?build|(?<=new )one)"
    rf"{_NOUN_OF}(?: on HOST)?\b"
    rf"|(?:a |an )?(?:clean|fresh|full|from-scratch|scratch)[ -](?:re)?build(?: (?:BUILD|it|that))?{_NOUN_OF}"
    rf"{_NOUN_END})"  # "clean rebuild BUILD": the noun as a verb
)
# When the bot is addressed, a clause that opens with the verb is a request whatever follows.
ADDRESSED_KILL_RE = re.compile(rf"^/?{_FORCE}(?:kill|stop|abort|cancel|halt|terminate|nuke)\b"  # "/kill BUILD" too
                               r"|^end (?:the|this|that) (?:process|build|job|run)$"  # "can you end the process?"
                               # "X needs killing", "X should be killed now", "I need X dead", "have X stopped"
                               r"|^(?:BUILD|it|the build|the BUILD build|this build|that build|this one|that one)"
                               r"(?: on HOST)? (?:needs to|needs|must|should|has to"
                               r"|ought to)(?: be)? (?:killing|stopping|killed|stopped|die|go|terminated|aborted)\b"
                               r"|^(?:i|we) (?:need|want) (?:BUILD|it|the build|the BUILD build) (?:dead|gone|stopped"
                               r"|killed)\b"
                               r"|^(?:i'd|id|i would|we'd|we would) like (?:BUILD|it|the build|the BUILD build)"
                               r" (?:stopped|killed|gone|dead)\b"
                               r"|^(?:have|get) (?:BUILD|it|the build|the BUILD build) (?:stopped|killed|terminated)\b")
ADDRESSED_REBUILD_RE = re.compile(
    r"^/?(?:build )?(?:rebuild|retry|rerun|restart|relaunch|re-?trigger)\b"
    r"|^(?:run|start|launch|kick off|kick|compile|install|reinstall|do) (?:the )?BUILD(?: build)?(?: on HOST)?"
    r"(?: from source)?(?: (?:now|please|pls|plz|again|once more|one more time))*$"
    # "BUILD needs a rebuild", "it needs to be restarted", "BUILD could use a fresh build"
    r"|^(?:BUILD|it|the build|the BUILD build)(?: (?:on|@) HOST)? (?:needs|could use|wants|requires|needs to be)"
    r" (?:a |another )?(?:(?:fresh|clean|full|new) )?(?:rebuild|re-?run|restart|retry|recompile|rebuilt|restarted"
    r"|rerun|recompiled|relaunched|rebuilding|restarting|recompiling|rerunning|reset|kick|bounce|poke|nudge)\b"
    # "repeat the BUILD build", "redo BUILD"
    r"|^(?:repeat|redo) (?:the )?(?:BUILD|it|that)(?: build| compile| install)?(?: (?:on|@) HOST)?$")
AGAIN_ONLY_RE = re.compile(r"(?:again|go again|once more|one more time)(?: please| now)?")
# A clause that takes back what came before it: "kill it? nah", "restart vllm... never mind".
TAKEN_BACK_RE = re.compile(r"(?:nah|nope|no|never ?mind|nvm|scratch that|forget it|on second thought|hold on"
                           r"|(?:don't|dont|do not|never) do (?:that|this|it)(?: on HOST| here| again)?"
                           r"|wait|not yet|actually no|jk|just kidding|idk|i dunno|dunno|not sure|unsure|no idea"
                           r"|not (?:until|till|before) (?:i|we|you|someone|[a-z]+) (?:say|says|said|tell|check"
                           r"|confirm|approve|look)s?(?: so| it)?|not now|not today"
                           r"|neither|none of (?:that|those|them|the above)"
                           # "retrigger? or is that pointless", "kill it? or not", "restart it? worth it?"
                           r"|(?:or )?(?:is (?:that|it) |would (?:that|it) be |would that be )?(?:pointless|useless"
                           r"|overkill|a waste(?: of time)?|not worth it|worth it|any use)|(?:or )?not|any point)"
                           r"(?: (?:wait|let it (?:run|be|finish)))?")
RESTART_RE = re.compile(r"\b(?:restart|relaunch|start over)\b")
# What happened when someone did what the clause before says: "run `pip install …` on HOST and it died".
WHAT_HAPPENED_RE = re.compile(
    r"(?:it|that|this|the build|BUILD|everything|the box|HOST)(?: (?:just|then|promptly|immediately|instantly))?"
    r" (?:died|crashed|failed|oomed|oom'd|broke|hung|blew up|exploded|froze|got killed|was killed|got oom-killed"
    r"|ran out of memory|went down|fell over)\b"
)
# A rebuild asked to start clean: "rebuild clean", "clean rebuild", "rebuild from scratch", "a fresh build".
_BUILD_DIR = (r"(?:the |its |any |old |existing |whole )*(?:build|out|output|cmake)[ -]?"
              r"(?:dirs?|director(?:y|ies)|folders?|tree|cache)")
CLEAN_RE = re.compile(r"\b(?:clean(?:ly)?|from (?:scratch|zero|nothing|the ground up)|fresh|afresh|a clean slate"
                      r"|scratch build|full rebuild|dirclean|distclean|mrproper|cleanall|clean-all)\b"
                      # "force cache recreation", "with cleaning the cache"
                      r"|\b(?:cache recreation|recreat\w* (?:the |its )?cache|(?:cleaning|clearing|wiping|dropping)"
                      r" (?:the |its )?cache)\b"
                      r"|(?<![\w-])--(?:wipe-build-dir|pristine|expunge|fresh)\b"
    # "with runner cache clobbered", "with the build dir nuked"
    r"|\b(?:cache|build dir|build directory|build folder|ccache|workspace) (?:clobbered|wiped|cleared|nuked|deleted"
    r"|removed|purged)\b"
                      # "rebuild it with the build dir wiped", "after removing the build folder"
                      rf"|\b(?:with|after) {_BUILD_DIR} (?:wiped|removed|deleted|cleared|gone|cleaned|nuked)\b"
                      r"|\b(?:after |by )?(?:wiping|removing|deleting|clearing|nuking|cleaning)"
                      rf" (?:out )?{_BUILD_DIR}\b")
# What says the kept work is spoiled, anywhere in a message that asks for a rebuild: "force cache recreation due to
# corruption and build it again", "the X build cache is corrupt again … rebuild": it starts clean.
# A clean start said of the rebuild a message asks for, in any of its clauses: "make sure we are doing a clean
# rebuild", "…, clean this time", "from a clean state (wipe `build/` first)", "make it a fresh build".
CLEAN_SAID_RE = re.compile(r"\b(?:clean(?:ly)? (?:re-?)?build|(?:a )?clean one|clean (?:this|next) time|clean state"
                           r"|from (?:a )?clean\b|clean slate|(?:a )?clean start|start (?:it |BUILD )?(?:clean|fresh)"
                           r"|from scratch|fresh (?:re-?)?build|(?:a )?fresh one|full rebuild|scratch build)\b"
                           rf"|\b(?:wipe|delete|remove|nuke|clear(?: out)?|rm -rf|blow away) (?:{_BUILD_DIR}(?![\w-])"
                           r"|(?:the )?(?:build|out|_build)/)"
                           # "before rebuilding delete all .o files from the build directory"
                           rf"|\b(?:delete|remove|wipe|clear|rm|purge)(?: all| the| any| every)? [^,;]{{1,25}}? (?:from"
                           rf"|in|under) {_BUILD_DIR}(?![\w-])")
CACHE_SPOILED_RE = re.compile(r"\b(?:(?:force |forced )?cache recreation|recreat\w* (?:the |its )?(?:build )?cache"
                              r"|(?:build |cmake |ccache )?cache (?:is |got |was |has been |seems )?(?:corrupt\w*"
                              r"|poisoned|broken|stale|busted|hosed|borked)|(?:corrupt\w*|poisoned|stale|broken)"
                              r" (?:build |cmake )?cache)\b")
# A clause of its own that asks for the kept work gone: "wipe the build dir", "make clean", "rm -rf build/".
CLEAN_ASK_RE = re.compile(
    r"^(?:(?:please|pls|just|and|then|first|also|ok|so|directly|simply|completely|fully|entirely|you need to"
    r"|we need to|need to|you should|you have to|you must|make sure to|be sure to|remember to) )*"
    # a clause that is only the word, after a rebuild: "rebuild X, and don't reuse the cache — clean"
    r"(?:(?:clean|cleanly|from scratch|start clean|clean start|clean please)$"
    r"|clean (?:it|that|BUILD|everything|the build)(?: up| out)?(?= and |$)"
    r"|(?:do |run )?(?:a )?(?:full |complete )?(?:make clean|dirclean|distclean|make distclean|cleanall)"
    r"|(?:wipe|clear(?: out)?|nuke|kill|delete|remove|rm -rf|blow away|removing|deleting|wiping|clearing"
    r"|(?:remove|delete|wipe) and recreate|recreate|clean(?: out| up)?|trash|toss|drop|throw away)"
    r"(?: (?:the|its|their|BUILD's|BUILD|the old|old|all|any|that|only|just|whole|entire"
    r"|existing|current|stale|half-written|\(or not\)))*"
    r" (?:build[ -]?dirs?|build[ -]?director(?:y|ies)|build folders?|build tree|build cache|cmake cache"
    r"|cmakecache(?:\.txt)?|build/|kept (?:build|work|objects)|objects|object files|build output|old build"
    r"|(?:the )?builds? artifacts|artifacts|everything (?:that was |it |we )?(?:compiled|built)"
    r"|cache(?= first| too| as well| before|$)))\b"  # "start X over, wipe the cache first"
)
NOT_CLEAN_RE = re.compile(r"\b(?:don't|do not|dont|without|no need to|never|not|no)\b[^,.;]{0,24}"
                          r"\b(?:clean|wip\w*|scratch|fresh|delet\w*|remov\w*)")

MEM_RE = re.compile(
    r"^(?:(?:show|get|give me|post|check) (?:me )?)?(?:the )?(?:rss|memory use|memory usage|ram use|ram usage)"
    r" (?:of|for) (?:the )?(?:BUILD|it|the build)(?: build)?\b|"
    r"(?:^|\b(?:run|show|post|get|give me|check|paste)(?: me)? )free -(?:h|m|g|b|mh|wh|gh)\b"
    r"|^(?:how is|what is|how does|what does|how do|check|show|show me|post|get|give me|look at|see|print"
    r"|report|dump)(?: the| our| HOST's| HOST)?(?: free| host| system| available| current)?"
    r" (?:mem|memory|ram|swap)\b"
    r"|^(?:HOST's |HOST |the )?(?:current |present |live |actual |overall |total )?(?:mem|memory|ram|swap)"
    r"(?: (?:on|of|for|@) HOST)?"
    r" (?:usages?|use|used|status|situation|pressure|picture|left|free|available|check|stats|info|levels?"
    r"|headroom|looking|look|like|now)\b"
    r"(?! (?:spikes|spiked|goes|went|grows|grew|jumps|jumped|stays|stayed|peaks|peaked|climbs|climbed|rises|rose"
    r"|drops|dropped|is|was|were|gets|got|keeps|kept|hits|hit|seems|looks|shows|showed)\b)"
    r"|\bhow much (?:free |available |total )?(?:mem|memory|ram|swap)"
    r"(?= space| is (?:left|free|used|there)| left| on HOST| (?:is|does) HOST (?:using|use|have)|$)"
    r"|\bhow much (?:free |available )?(?:mem|memory|ram|swap)"
    r"(?: (?:is )?(?:left|free|available|used|in use|on HOST|does HOST have|do we have|is there"
    r"|have we got)|$)"
    r"|^what is (?:using|eating|hogging) (?:all )?(?:the )?(?:mem|memory|ram)\b"
    # "which process is using the most ram on HOST", "how full is the ram", "htop on HOST"
    r"|^(?:which|what) (?:process|processes|procs?|job|jobs|thing|program)(?: is| are)?"
    r" (?:using|eating|hogging|holding)"
    r" (?:the most |all the |so much |most of the )?(?:mem|memory|ram|swap)\b"
    r"|^how (?:full|much used) is (?:the )?(?:HOST's )?(?:mem|memory|ram|swap)\b"
    r"|^(?:show |run |post |check |get |give me )?(?:htop|top|btop|vmstat|free)(?: (?:for|on|of|@) HOST| HOST)?$"
)
_BUILDISH = r"(?:build|compile|BUILD)"
# "is X running out of memory?" asks the memory, not whether X runs
_NOT_RUNNING_OUT = r"(?! (?:out of|low on) (?:mem|memory|ram|swap|disk|space)\b)"
STATUS_RE = re.compile(
    r"^(?:sitrep|status report|state of play)(?: (?:on|for|from) (?:HOST|BUILD|the build|everything))?$|"
    r"(?<!gpu )(?<!gpus )\bstatus (?:of|on|for) (?:the |my |our )?"
    r"(?:build|builds|compile|BUILD|HOST|things|it)\b"
    rf"|^(?:the |HOST's |HOST )?{_BUILDISH}(?:'s)? status\b"
    r"(?! (?:meeting|call|sync|standup|doc|page|report|email|channel|board|dashboard|badge|bar|code|field))"
    rf"|^(?:any )?(?:progress|eta|update|news)(?: (?:on|for|with|of) (?:the )?(?:{_BUILDISH}|HOST))?$"
    rf"|^what is the (?:{_BUILDISH} )?status(?: (?:of|on|for) (?:the )?(?:{_BUILDISH}|HOST))?$"
    r"|^how is (?:the |my |our )?(?:HOST's )?(?:build|builds|compile|compilation|BUILD|HOST)"
    r"(?: build| compile| rebuild| prebuild)?(?: (?:on|@) HOST)?"
    r"(?: (?:going|doing|coming along|looking|progressing|getting on))?"
    r"(?: (?:on|@) HOST)?$"
    r"|^is (?:the |my |our )?(?:build|compile|BUILD|ninja|it)(?: (?:on|@) HOST)? (?:still )?"
    r"(?:running|going|building|compiling|done|finished|alive|stuck|hung|progressing|complete|over)\b"
    rf"{_NOT_RUNNING_OUT}"
    rf"|^(?:did|has) (?:the |my |our )?{_BUILDISH}(?: (?:on|@) HOST)? (?:finish|finished|complete|completed"
    r"|succeed|succeeded|pass|passed|fail|failed|die|died|crash|crashed|break|broke|end|ended|work)\b"
    r"|^what is (?:running|going on|happening) (?:on|@|with) (?:HOST|the build|BUILD)\b|^what is running$"
    r"|^(?:is )?(?:anything|something) (?:still )?running\b(?! on (?:the |all the )?(?:HOST's )?(?:gpus?|cards)\b)"
    r"|^(?:check|show|get|give me|post)(?: me)? (?:the )?(?:build )?(?:status|progress)\b"
)
# "show me the error", "pull the gpu picture", "output the whole log", "can we see what nvidia-smi says": a look
# verb opening the clause, and what to look at within the clause.
LOOK_VERB_RE = re.compile(
    r"^(?:show|post|pull(?: up)?|bring up|get|give|see|output|print|dump|check|paste|share|send|fetch|grab|display"
    r"|provide|run|return|list|indicate|describe|summarize|summarise|count|report on|monitor|watch"
    r"|view|open|read|look at|tell me|let me see|take a look at|have a look at|report|keep an eye on|keep watching"
    r"|track)(?: me| us)?\b"
)
# Said to rigops, a tool named to use is a look with it: "use nvidia-smi on gpu01" (to a person, advice).
ADDRESSED_LOOK_TOOL_RE = re.compile(r"^(?:use|try|try running|try using|run|just run) (?P<tool>nvidia-smi"
                                    r"|free(?: -[hmg])?|tail(?: -[nf])?)(?![\w-])")
LOOK_OBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("gpu", re.compile(r"\b(?:nvidia-smi|gpus?|gpu picture|cards|vram|gpu temps?|gpu util\w*)(?![\w-])")),
    ("log", re.compile(r"\b(?:logs?|output(?! of (?:the )?(?:nvidia-smi|free|df|htop|top|btop|vmstat|ps|dmesg)\b)"
                       r"|errors?|failure|traceback|stack trace|last \d+|tail)\b")),
    ("mem", re.compile(r"\b(?:mem|memory|ram|swap|swapping|thrashing|free -h|free memory)\b")),
    ("status", re.compile(r"\b(?:status|progress|which step|what step|how far)\b")),
)


# A question about where a build is now: "is vllm still alive?", "how far along is it?", "which step is it on?",
# "has sgl-kernel reached the link step yet?", "is anything still compiling on HOST?", "is it wedged?".
_SUBJECT = (r"(?:the |this |that |my |our |HOST's |HOST )?(?:BUILD(?: build| compile| rebuild| install)?|build|builds"
            r"|compile|compilation|rebuild|install|it|its|it's|anything|something|ninja|the compiler|make|cmake|this"
            r"|that|HOST)")
_STATE = (r"(?:alive|dead|running|going|building|compiling|linking|progressing|moving|stuck|hung|hanging|wedged"
          r"|frozen|done|finished|complete|completed|over|doing anything|doing something|still waiting|quiet"
          r"|making progress|getting anywhere|working|still there|still up|at \d+ ?%|past \d+ ?%|reached|at the"
          r" link(?:ing)? step|on the link(?:ing)? step|dying|dead now|stopping at|still stuck|doing stuff"
          r"|doing things|doing work|alive at all|close to done|nearly done|almost done)")
STATUS_QUESTION_RE = re.compile(
    # "where is X at (on HOST)?", "where's the build at now", "where are we at with X?"
    r"^(?:where(?:'s| is| are)|wheres) (?:BUILD|it|the build|the BUILD build|we|things)(?: build)? at"
    r"(?: (?:on|with) (?:HOST|BUILD|it|the build))*(?: now| right now| currently)?$|"
    rf"^(?:is|are|has|have|was|did|does|do you see|any idea if|is there) (?:{_SUBJECT} )?"
    rf"(?:[^?]{{0,30}} )?(?:still |actually |even |really |just |already |now |yet )*{_STATE}\b"
    rf"{_NOT_RUNNING_OUT}"
    rf"|^(?:{_SUBJECT} )?(?:still )?(?:alive|running|going|compiling|building|progressing|moving)"
    r"(?: or (?:dead|not|hung|stuck|what))?$"
    r"|^(?:still )?alive(?: or dead)?$"
    r"|\bhow far\b|\bhow (?:close|near)\b(?![^?]{0,30}\bto (?:oom|an oom|the oom|running out|swap|swapping)\b)"
    r"|\bhow (?:much )?longer\b|\bhow long (?:until|till|to go|left|remaining)\b"
    r"|^(?:what|which) (?:step|stage|file|target|phase|object|percent|percentage|point|part|line) (?:is|'s|are|has)\b"
    r"|^what (?:is|'s) (?:BUILD|it|the build)(?: on HOST)? (?:on|at|doing|up to)\b"
    # "what's up with X", "anything building on HOST right now?", "which builds are running?"
    r"|^(?:what(?:'s| is)|whats) (?:up|going on|happening) with (?:(?:the )?BUILD(?: build)?|it|the build|HOST)\b"
    r"|^(?:is )?(?:there )?(?:anything|something|any builds?) (?:still )?(?:building|compiling|running)\b"
    r"(?! on (?:the |its |HOST's )?(?:gpus?|cards?|devices)\b)"
    r"|^(?:which|what) builds? (?:are|is) (?:still )?(?:running|building|going|compiling)\b"
    r"|^where(?: is|'s|s) (?:BUILD|it|the build)(?: on HOST)?(?: at)?(?: now| right now| currently| so far)?$"
    r"|^(?:any idea|do you know|can you tell|could you tell|tell me) where (?:it|BUILD|the build)(?: is|'s|s) at\b"
    r"|^(?:any )?(?:update|updates|progress|news|eta)(?: (?:on|for|with|of) [^?]{1,30})?$"
    r"|^how is (?:the )?(?:progress|it going) (?:on|of|with) (?:BUILD|the build|it|the BUILD build)\b"
    # "how's it going?", "what's its status", "how are things looking on HOST"
    r"|^how(?: is|'s|s| are) (?:BUILD|the build|the BUILD build)(?: (?:on|@) HOST)?"
    r" (?:going|coming along|doing|looking|progressing)\b"
    r"|^how(?: is|'s|s| are) (?:it|things|everything) (?:going|coming along|doing|looking|progressing)"
    r" (?:on|@|with) (?:HOST|BUILD)\b"
    r"|^(?:what(?: is|'s|s) )?(?:its|BUILD's|the build's) (?:status|progress|state)\b"
    # "did X make it?", "is X through yet", "what's the verdict on X", "any luck with X?", "X done?", "still going,
    # X?", "where are we with X", "percent done on X?"
    r"|^did (?:BUILD|it|the build)(?: (?:on|@) HOST)? (?:make it|get through|go through|pass|finish|succeed|work)\b"
    r"(?! (?:into|in|onto|to|out of)\b)"
    r"|^is (?:BUILD|it|the build)(?: (?:on|@) HOST)? (?:through|there|ready|done|over)(?: yet)?$"
    r"|^what(?: is|'s|s) the (?:verdict|word|news|story|deal|status|situation) (?:on|with|for) (?:BUILD|HOST|it"
    r"|the build)\b"
    # "what's the state of the BUILD build", "the current progress of BUILD"
    r"|^(?:what(?: is|'s|s) )?the (?:current |latest )?(?:state|status|progress) of (?:the |my |our )?(?:BUILD|it"
    r"|the build|HOST's build)(?: build)?(?: (?:on|@) HOST)?(?: now| right now| currently)?$"
    # "how long has BUILD been building?", "how long has it been running on HOST"
    r"|^how long (?:has|have) (?:the |my |our )?(?:BUILD|it|the build)(?: build)?(?: (?:on|@) HOST)? been"
    r" (?:building|running|going|compiling|linking|at it|stuck|hanging|up)\b"
    r"|^any (?:luck|joy|progress|news)(?: (?:with|on|for) (?:BUILD|HOST|it|the build))?$"
    r"|^(?:the )?BUILD(?: build)?(?: (?:on|@) HOST)? (?:done|finished|ready|dead|alive|through|over"
    r"|still (?:going|running|alive|building|compiling))(?: yet)?$"
    r"|^still (?:going|running|alive|building|compiling)(?:,? (?:BUILD|HOST|the build))?$"
    r"|^where are we (?:with|on|at) (?:BUILD|HOST|it|the build)\b"
    # "how many steps left on X", "what % is X at", "when will X be done"
    r"|^how many (?:steps|targets|files|objects|jobs|units) (?:are )?(?:left|remaining|to go)\b"
    r"|^what (?:%|percent|percentage) is (?:BUILD|it|the build)(?: build)?(?: on HOST)? at\b"
    r"|^when (?:will|does|is) (?:BUILD|it|the build)(?: build)?(?: on HOST)? (?:be )?(?:done|finish|finished|end"
    r"|complete|completed|ready)\b"
    # "what's taking so long with X", "why is X taking so long"
    r"|^(?:what(?: is|'s|s) taking (?:so|this|that) long|why is (?:BUILD|it|the build)(?: build)?(?: on HOST)?"
    r" taking (?:so|this|that) long)(?: (?:with|on|for) (?:BUILD|HOST|it|the build)(?: build)?)?\b"
    r"|^(?:percent|percentage|%) (?:done|complete|finished)(?: (?:on|for|of|with) (?:BUILD|HOST|it|the build))?$"
    r"|^is (?:it|BUILD|the build|HOST's build|the HOST build|the BUILD build)(?: on HOST)?"
    r" (?:past|beyond|over|at) (?:\d+|the)\b"
)
# Questions about memory, the GPUs and the log now: "is memory ok on HOST?", "any swap left?", "are the gpus
# free?", "what does the log say?", "any errors in the log?".
MEM_QUESTION_RE = re.compile(
    r"\b(?:output|result|numbers) of free(?: -[hmgb])?\b|"
    r"^(?:(?:is|are|how is|what is|how's|and|any|the|our|HOST's|HOST|on HOST|free|available) )*"
    r"(?:mem|memory|ram|swap|headroom)\b[^?]{0,30}\b(?:left|free|available|usage|used|ok|okay|fine|looking"
    r"|look like|like|full|pressure|status|situation|at|now|getting low|running low|holding up|enough)\b"
    r"|^(?:is|are|how is|what is) (?:HOST |HOST's |the box |the machine |it |BUILD |the build |the BUILD build )?"
    r"(?:still )?(?:swapping|thrashing|out of (?:mem|memory|ram)|low on (?:mem|memory|ram)"
    r"|running (?:out of|low on) (?:mem|memory|ram))\b"
    r"|^any (?:free |available )?(?:mem|memory|ram|swap|headroom)(?: (?:left|free|available)\b|(?: (?:on|@) HOST)?$)"
    # "how close is HOST to OOM?", "how near is the box to running out"
    r"|^how (?:close|near) (?:is |are )?(?:HOST|it|the box|the machine|the host|BUILD|we)"
    r" to (?:oom|an oom|the oom|running out|swap|swapping)\b"
    r"|^what(?: is|'s|s) free(?: (?:on|@) HOST)?(?: now| right now)?$"
    # "what does free -h say on HOST", "how much does HOST have free"
    r"|^what(?: does| did| is|'s|s) free(?: -[hmgb])? (?:say|show|print|output)\b"
    r"|^how much (?:(?:ram|memory|mem|swap) )?(?:does|do) (?:HOST|it|the box|the machine) (?:have|got)"
    r" (?:free|left|available|spare)\b"
    # "how much ram is X using", "… does X take right now", "is there room on HOST for another
    # build"
    r"|^how much (?:ram|memory|mem|rss) (?:is|does) (?:BUILD|it|the build|the BUILD build)(?: on HOST)?"
    r" (?:using|eating|holding|hogging|(?:use|take|eat|hold)(?= (?:right now|now|currently|at the moment)\b))"
    r"|^is there (?:enough )?(?:room|space|headroom|memory|ram)(?: (?:on|@) HOST)? for (?:another|a second|one more"
    r"|a new|a parallel) (?:build|job|compile)\b"
    r"|^how much (?:free |available |spare |usable )?(?:ram|memory|mem|swap|headroom)(?: space)?\b"
    r"(?![^?]{0,40}\b(?:need|needs|needed|take|takes|took|require|required|requires|use|uses|used|per|should)\b)"
)
# "gpu", "gpus", one by its index ("gpu0", "gpu 3"), the cards by their model ("the h100s", "the l40s")
_GPU = r"(?:gpus?|gpu ?\d{1,2}|(?:h100|h200|a100|a10|v100|l40|l4|b200|b100|mi300|rtx ?\d{4})s)(?![\w-])"
GPU_QUESTION_RE = re.compile(
    r"\b(?:output|result|numbers) of nvidia-smi\b|^how much (?:vram|gpu memory|gpu mem|video memory)\b|"
    rf"\b(?:{_GPU}|nvidia-smi|vram|cards?)[^?]{{0,30}}"
    r"\b(?:free|busy|idle|in use|used|util|utilization|doing"
    r"|available|occupied|say|says|show|shows|look|looking|loaded|hot|running|on|report|reports|print|prints"
    r"|give|gives)\b"
    r"|^(?:what is|who is|anything|anyone|what's|who's|whats|whos)"
    r" (?:running (?:on )?|using |on |hogging |eating |holding |occupying |sitting on )(?:the |all the )?"
    r"(?:HOST's )?gpus?\b"
    rf"|^is (?:there )?anything (?:running )?on (?:the )?(?:{_GPU}|cards\b)"
)
LOG_QUESTION_RE = re.compile(
    r"^what (?:does|did|do) (?:the )?(?:BUILD |build )?(?:log|logs|output|it) (?:say|show|print|end with)\b"
    r"|^(?:any|what) (?:errors?|failures?)\b[^?]{0,30}\b(?:log|logs|output|BUILD)\b"
    # "anything in the X error log?", "anything interesting in the logs?"
    r"|^(?:(?:is there|see) )?anything (?:\w+ )?in (?:the |its |BUILD's )?(?:BUILD )?(?:error |build )?"
    r"(?:log|logs|output)\b"
    r"|^what (?:is|was) the (?:last |first |actual |real )?(?:error|failure)\b"
    # "what did X spit out", "what broke in X"
    r"|^what (?:did|does) (?:(?:the )?BUILD(?: build)?|it|the build)(?: (?:on|@) HOST)?"
    r" (?:spit out|print|say|output|log|end with)\b"
    r"|^what (?:broke|failed|went wrong|blew up|died) (?:in|on|with|for) (?:BUILD|the build|it)\b"
    r"|^(?:which|what) (?:file|step|target|object|line|kernel|source|unit) (?:broke|failed|killed|crashed|blew up)"
    r" (?:the )?(?:BUILD|build|it)\b"
    # "what does the tail of BUILD look like"
    r"|^what (?:does|did) the (?:tail|end|last (?:few )?lines?) of (?:the )?(?:BUILD|it|the build)(?: build)?"
    r"(?: log| output)?(?: on HOST)? (?:look like|say|show)\b"
    # "what's the last thing X printed", "what was the last line it logged"
    r"|^(?:what(?:'s| is| was)?|whats) the (?:last|latest|most recent) (?:thing|things|lines?|output|message|messages)"
    r" (?:BUILD|it|the build)(?: on HOST)? (?:printed|said|logged|wrote|output|spat out|spit out)\b"
)
# "build it again", "compile vllm once more", "try building it again": the verb, the build, "again".
REBUILD_AGAIN_RE = re.compile(
    r"^(?:build|compile|install|start|launch|try building|try compiling)"
    r" (?:it|that|BUILD|the build|the BUILD build|BUILD build)(?: on HOST)? (?:again|once again|yet again|once more"
    r"|one more time"
    r"|from scratch|from source(?=(?: on HOST)?(?: please| pls| again| now)?[.!?]*$)|another (?:go|shot|try))\b"
    r"|^(?:run|try|kick off|fire off|fire up|spin up|start up|bring back|bring up|give) (?:BUILD|the BUILD build"
    r"|BUILD build)(?: on HOST)? (?:again|once again|yet again|once more|one more time|from scratch"
    r"|another (?:go|shot|try)|one more (?:go|shot|try|round))\b"
    # "spin up a new BUILD build", "fire off another BUILD build": a new run of the build, by its noun
    r"|^(?:spin up|fire off|fire up|kick off|start|launch|queue|run|trigger|retrigger|re-trigger|schedule)"
    r" (?:a |an )?(?:new|fresh|another|second)"
    r" (?:BUILD build|build of BUILD|run of BUILD|BUILD run|BUILD|run|build|attempt)\b"
    # "bring BUILD back with 4 jobs", "bring the build back up at -j6"
    r"|^bring (?:BUILD|the build|the BUILD build) back(?: up)?(?= (?:with|at|using|on) )"
)
LOG_RE = re.compile(
    # "show me what BUILD printed last"
    r"^(?:show|tell|give) (?:me |us )?what (?:BUILD|it|the build)(?: on HOST)?"
    r" (?:printed|said|spat out|logged|output)(?: last| at the end| before it died)?$|"
    r"^(?:tail|cat|show|post|paste|send|give|get|dump|grab|check|see|look at|print|pull|fetch|share|return|grep)\b"
    r"[^?]{0,40}?\b(?:logs?|(?<!nvidia-smi )(?<!free -h )(?<!df -h )(?<!htop )output(?! of (?:nvidia-smi|free|df|htop))"
    r"|lines)\b"
    r"|^tail(?: -[nf]| --lines=?)?(?: ?-?\d+)?(?: (?:it|the log|the logs|BUILD|on HOST|of (?:it|that|the log|BUILD)))*$"
    # "…, then logs from the job as it runs": the log asked after another look
    r"|^(?:the )?(?:build )?logs? (?:from|of|for) (?:the job|the build|it|BUILD)(?: on HOST)?(?: as it runs| live)?$"
    r"|^tail (?:the )?last -?\d+\b|\blast -?\d+ (?:log |build log |output )?lines?\b"
    r"(?! (?:were|was|are|is|says|said|showed|shows|looked|looks|had|has|contained|contains)\b)"
    r"|^(?:tail|show|post|paste|send|give|get|dump|grab|print|pull|fetch|share)(?: me| us)? (?:the )?last -?\d+"
    r"(?: please)?$"
    rf"|^what is the (?:{_BUILDISH} )?(?:error|errors|failure)"
    r"(?: (?:on|in|with|from|for) (?:the )?(?:HOST|BUILD|build|compile|log))?$"
    r"|^(?:why|where|at what point) (?:did|is|does) (?:it|the build|BUILD|the compile|HOST)(?: (?:on|@) HOST)?"
    r" (?:still )?"
    r"(?:fail|failing|die|dying|break|broken|breaking|crash|crashing|oom|stop)\b"
    r"|^what (?:failed|broke)$"
)
_NOT_LINES_AFTER = (  # "the last 2 hours", "the last 3 runs": a span of time or runs, not lines
    r"(?! ?(?:min|mins|minutes|m|h|hrs?|hours?|days?|d|weeks?|secs?|seconds|s|runs?|builds?|times?|attempts?"
    r"|tries|jobs?|commits?|prs?|retries|restarts)\b)"
)
# A count offered after a look at the log, as its own clause: "… the last few lines of the log? say 100?"
LOG_LINES_OFFERED_RE = re.compile(r"(?:^|[.?!,;]\s*)(?:(?:say|like|maybe|about|around|something like|or so) (\d+)"
                                  r"|--(?:tail|last|lines)[= ]?(\d+)|-n ?(\d+))(?: lines?| or so)?\s*[?.!]*\s*$"
                                  # "… last 200 lines is enough", "100 lines should do"
                                  r"|(?:^|[.?!,;]\s*)(?:the )?(?:last |first )?(\d+) lines? (?:is|are|should be"
                                  r"|would be|will be|should do|will do|would do)"
                                  r"(?: (?:enough|plenty|fine|ok|okay|good))?\s*[?.!]*\s*$",
                                  re.ASCII)
LOG_LINES_RE = re.compile(
    rf"\blast (-?\d+)\b{_NOT_LINES_AFTER}|(?<![\w-])(-?\d+) (?:last |final )?(?:log |build log |output )?lines?\b"
    r"|\btail (?:-n ?|-|--lines=?)?(-?\d+)\b|\blogs? (?:-n ?)?(-?\d+)\b|(?<![\w])(?:-n ?|--lines=?)(-?\d+)\b"
    r"|(?<![\w-])--(?:last|tail)[= ](-?\d+)\b",
    re.ASCII,
)
GPU_RE = re.compile(
    r"\b(?:run|show|post|get|give me|check|paste)(?: me)? nvidia-smi\b"
    r"|^nvidia-smi(?: (?:on |@|for )?HOST| please| now| again| output)*$"
    rf"|^(?:HOST's |HOST |the )?{_GPU}(?:'s)? (?:status|util|utilization|utilisation|usage|use|load|busy"
    r"|free|idle|stats|info|temps?|temperature|mem|memory|check|occupancy|available)\b"
    # ... not told of: "gpu memory usage seems to be steadily increasing"
    r"(?!(?: usage)? (?:seems|seemed|is|was|keeps|kept|looks|looked|went|goes|has|had|stays|stayed|grows|grew"
    r"|increases|increased|climbs|climbed|creeps|crept|jumps|jumped|spikes|spiked)\b)"
    r"|^(?:check|show|show me|how is|what is|get|post|give me|look at)(?: me)?(?: the| all| our)?(?: HOST's)?"
    rf"(?: {_GPU})? (?:on )?(?:the )?{_GPU}"
    rf"|^(?:is|are) (?:the |any |all |HOST's )?(?:{_GPU} )?{_GPU}(?: (?:on|@) HOST)? (?:still |all )?"
    r"(?:busy|free|idle|in use|available|being used|used|loaded|hot|doing anything|occupied|running)\b"
    rf"|\bany (?:free|idle|available) {_GPU}|\b(?:anyone|anybody|who is|who's|whos) using (?:the )?{_GPU}"
    rf"|^(?:who is|who's|whos|what is|what's|whats) (?:hogging|eating|holding|occupying|sitting on)"
    rf" (?:the |all the |HOST's )?{_GPU}"
)

# Disk space where the builds work: "df -h on HOST", "check disk space", "how much disk is left on HOST", and in a
# question "is the disk full on HOST?", "are we out of disk space?".
_DISK = r"(?:disk|disks|disk space|disk usage|free disk space|free space|storage)"
DISK_RE = re.compile(
    r"(?:^|\b(?:run|show|post|get|give me|check|paste)(?: me)? )df(?: -[hHkT]{1,3})?(?: (?:on |@|for )?HOST| please"
    r"| now| output)*$"
    rf"|^(?:check|show|show me|get|give me|post|look at|what is|how is)(?: the| our)?(?: HOST's)? {_DISK}"
    r"(?: (?:on|of|for|@) HOST)?(?: (?:usage|left|free|available|like|now))?$"
    rf"|^(?:HOST's |HOST |the )?{_DISK}(?: (?:on|of|for|@) HOST)?(?: (?:usage|left|free|available|status|check"
    r"|now))?$"
    r"|^how much (?:free |available )?(?:disk|disk space|space|storage)(?: space)?(?: is| do we have| does HOST have)?"
    r"(?: (?:left|free|available|remaining))?(?: (?:on|@) HOST)?$"
)
DISK_QUESTION_RE = re.compile(
    r"^(?:is|are) (?:the |our |HOST's |any )?(?:disk|drive|filesystem|file system|root fs|root partition|partition"
    r"|volume)s?(?: (?:on|@) HOST)? (?:still )?(?:full|nearly full|almost full|filling up|out of space"
    r"|running out of space)\b"
    r"|^(?:is|are) (?:HOST|we) (?:out of|low on|running out of|running low on) (?:disk|disk space|space|storage)\b"
)

# Each look's requests ("free -h", "check the gpus") and, in a question, its questions ("is memory ok?"): a look
# that matches is asked for. A new look adds its patterns here.
LOOK_REQUESTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("mem", MEM_RE), ("status", STATUS_RE), ("log", LOG_RE), ("gpu", GPU_RE), ("disk", DISK_RE),
)
LOOK_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("status", STATUS_QUESTION_RE), ("mem", MEM_QUESTION_RE), ("gpu", GPU_QUESTION_RE), ("log", LOG_QUESTION_RE),
    ("disk", DISK_QUESTION_RE),
)

# "memory chart", "graph the memory", "plot mem usage", "show me the chart"
_CHART = r"(?:chart|graph|plot|timeline)s?"
CHART_RE = re.compile(
    rf"\b(?:(?:mem|memory|ram|rss)(?: usage| use| pressure)?|oom) {_CHART}\b"
    rf"|\b{_CHART} (?:of |for |the |our |HOST's |BUILD's )*(?:mem|memory|ram|rss)\b(?: usage| use)?"
    r"|^(?:(?:show|post|send|give|get|draw|make)(?: me| us)? )?(?:the |a )?(?:mem |memory )?"
    rf"{_CHART}(?: please| (?:for|of|on) (?:the )?(?:HOST|BUILD|build))*$"
)

# A clause that is only a keyword (after fillers and names are dropped): "mem", "status", "logs 200".
FILLER_RE = re.compile(
    r"@ ?HOST\b|\?"
    r"|\b(?:please|now|thanks|thx|ty|quick|real quick|right now|asap|again|currently|max|tops|at most|this time"
    r"|instead|at a time|first|too|as well|there|anyway|anyways|pls|(?:just )?to be sure|just in case"
    r"|anyone|anybody|someone|somebody|both"
    r"|to (?:double[- ]?)?check"
    r"|(?:on|for|of) HOST|HOST's|HOST|(?:for|of|on) BUILD|BUILD)\b"
)
TRAILING_NAMES_RE = re.compile(r"(?: (?:on|@|for|of|in) (?:HOST|BUILD|the build|the box)| HOST| BUILD| if possible"
                               r"| if you can| when you can| right now| too| as well)+$")
BARE_WORDS: dict[str, str] = {
    **dict.fromkeys(("mem", "memory", "ram", "swap", "free", "free mem", "free memory", "free -h",
                     "mem usage", "memory usage", "ram usage", "mem check", "memory check", "mem status",
                     "the memory", "the ram", "the memory usage", "the ram usage"),
                    "mem"),
    **dict.fromkeys(("status", "build status", "status check", "status update", "progress", "eta",
                     "what is running", "anything running", "state", "the status", "the progress",
                     "the build status", "its status"), "status"),
    **dict.fromkeys(("log", "logs", "tail", "build log", "build logs", "the log", "the logs", "log tail",
                     "logs tail", "error log", "tail -f", "output"), "log"),
    **dict.fromkeys(("df", "df -h", "disk usage", "free disk space", "the disk usage"), "disk"),
    **dict.fromkeys(("gpu", "gpus", "gpu status", "gpu util", "gpu usage", "nvidia-smi", "gpu stats",
                     "the gpus", "gpu utilization", "gpu utilisation", "vram", "vram usage", "the vram",
                     "the vram usage"), "gpu"),
}
# Only for @mentions and slash commands.
ADDRESSED_BARE_WORDS: dict[str, str] = {
    **dict.fromkeys(("kill", "stop", "abort", "cancel", "halt", "terminate", "kill it", "stop it"), "kill"),
    **dict.fromkeys(("rebuild", "retry", "rerun", "build", "again", "go again"), "rebuild"),
    **dict.fromkeys(("restart", "relaunch", "start over"), "restart"),
    **dict.fromkeys(("how's it going", "how is it going", "hows it going", "how's it coming along",
                     "how is it coming along", "how's it looking", "how is it looking"), "status"),
    **dict.fromkeys(("hosts", "list hosts", "host list", "list", "which hosts", "what hosts", "machines",
                     "boxes", "servers", "list the hosts", "show hosts", "what hosts do you know"), "hosts"),
    **dict.fromkeys(("help", "commands", "usage", "what can you do", "how do i use you", "man", "halp",
                     "what do you do", "how does this work"), "help"),
}
_OF_THE_LOG = r"(?: (?:of|from) (?:the )?(?:build )?(?:logs?|output))?"
LOG_BARE_N_RE = re.compile(
    r"tail -(\d+)|(?:log|logs|tail)(?: -n| --lines=?)? ?(-?\d+)(?: lines?)?"  # tail -200: 200 lines
    rf"|(?:the )?last (-?\d+)(?: (?:log |build log |output )?lines?)?{_OF_THE_LOG}"
    rf"|(-?\d+) (?:log |build log |output )?lines{_OF_THE_LOG}"
    r"|(?:log|logs|tail)(?: BUILD| (?:on|@) HOST| HOST)* (?:-n ?|--lines[= ]|--last[= ]|--tail[= ])(-?\d+)"
    # "log pls BUILD last 30"
    r"|(?:log|logs|tail)(?: BUILD| (?:on|@) HOST| HOST| of BUILD)* (?:the )?last (-?\d+)(?: lines?)?",
    re.ASCII,
)

# --- names ---------------------------------------------------------------------------------------------

# A host-like word in a clear position: "on h100", "@gpu-7", "h100's". Names need a letter and a digit.
HOST_SLOT_RE = re.compile(
    r"(?:(?<![\w-])on|(?<![\w])@)\s?(?:(?:the )?(?:host|box|node|machine|server) )?([a-z][a-z0-9_.-]{0,62})"
    r"|(?<![\w.-])([a-z][a-z0-9_.-]{0,62})'s\b"
    # a host told about as the subject of its trouble: "h100-7 is down to 10% swap free, kill whatever is building"
    r"|(?:^|(?<=[.?!;,:\n\x01]) ?)([a-z][a-z0-9_.-]{0,62}\d[a-z0-9_.-]{0,62})(?= (?:cannot allocate memory"
    r"|can't allocate memory|out of memory|oom-?(?:ing|ed|killed)|swapping|thrashing|ran out of memory)\b"
    r"| (?:is|was|keeps|has|just|seems)"
    r" (?:down|dying|swapping|thrashing|oom|ooming|out of|low on|running out|at \d|full|unreachable|unresponsive"
    r"|hung|stuck|on fire|melting|crawling|killing)\b)"
    # a host named bare after what to do, said in a word: "nvidia-smi node-5", "kill BUILD node-5", "mem h100-3"
    r"|(?:^|(?<=[.?!;,:\n\x01]) ?)(?:nvidia-smi|free -[hmgb]|free|mem|memory|ram|swap|status|progress|logs?|tail"
    r"|gpus?|kill|stop|abort|cancel|restart|rebuild|rerun|retry|check)(?: BUILD| the BUILD build)?"
    r" ([a-z][a-z0-9_.-]{0,62}\d[a-z0-9_.-]{0,62})(?=\s*(?:$|[.?!;,\n]|please\b|pls\b|now\b))"
)
NOT_A_HOST_RE = re.compile(  # arches, toolchains, versions, models, sizes and times that look like hosts
    r"(?:j\d+|sm_?\d+[a-z]?|compute_\d+|cuda[\w.-]*|cu\d+|py(?:thon)?[\d.]*|gcc[\w.-]*|g\+\+|clang[\w.-]*"
    r"|cmake[\w.-]*|ubuntu[\w.-]*|centos[\w.-]*|rhel[\w.-]*|debian[\w.-]*|x86_64|aarch64|arm64|amd64"
    r"|v\d[\w.-]*|torch[\w.-]*|pr-?\d+|gpu\d{1,2}|nccl[\w.-]*|fp\d+|bf16|int\d+|e\dm\d"
    r"|llama[\w.-]*|qwen[\w.-]*|mistral[\w.-]*|mixtral[\w.-]*|deepseek[\w.-]*|gpt[\w.-]*|glm[\w.-]*"
    r"|gemma[\w.-]*|phi[\w.-]*|kimi[\w.-]*"
    r"|\w+\d+[kmgt]i?b|\d\w*|[a-z]+\.\d[\w.]*|[a-z]{1,3}\d{1,2}(?:am|pm)|q\d|h\d)"
)


@dataclass(frozen=True)
class Names:
    hosts: tuple[str, ...] = ()  # config host names mentioned, canonical spelling, first mention first
    builds: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # host-like words in a clear position that the config does not know
    masked: str = ""
    unknown_builds: tuple[str, ...] = ()  # build-like names in a clear position that the config does not know
    build_mentions: tuple[str, ...] = ()  # each BUILD of ``masked``, in order (a name said twice is here twice)


ALL_HOSTS_RE = re.compile(
    r"\b(?P<every>(?:all|every|each)\s+(?:the\s+|of\s+the\s+)?"
    r"(?:hosts?|machines?|boxes|box|nodes?|servers?|rigs?))\b"
    # not "across all Nvidia GPUs on HOST" (the GPUs of one), nor "on all the HOST nodes" (a group named)
    r"|\b(?:on|for|across)\s+(?P<on>all|everything)\b(?!\s+(?:(?:the|my|our|its|of\s+the|of\s+its)\s+)?"
    r"(?:HOST|nvidia\w*|gpus?|cards?|devices?|processes|procs|cores|cpus|threads|files|lines|logs?|memory|ram"
    r"|other|rest|builds?|jobs?|compiles?|steps?|targets?|packages?|tests?|them|those|these)\b)"
    r"|^\s*(?:status|mem|memory|ram|gpus?|nvidia-smi|free(?:\s+-h)?)\s+(?P<bare>all)\s*[?.!]*\s*$"
    # "mem everywhere", "disk across the fleet"
    r"|\b(?P<where>everywhere|across\s+the\s+(?:fleet|board)|fleet-?wide)\b"
    # "status of everything", "how's everything looking", "how are all the builds doing", "status of all builds"
    r"|\b(?:status|state|summary|overview|health|update)\s+(?:of|for|on)\s+(?P<of>everything|all\s+(?:the\s+)?builds)\b"
    r"(?!\s+(?:on|@)\s+HOST\b)"
    r"|^(?:so\s+|ok\s+|and\s+)?how(?:'s|\s+is|\s+are)\s+(?P<how>everything|things|all\s+(?:the\s+)?builds)"
    r"(?:\s+(?:looking|going|doing))?\s*\??\s*$")


def _mask_all(m: re.Match[str]) -> str:
    """Replace only the words that mean "every host", keeping the verb around them."""
    name = next(g for g in ("every", "on", "bare", "where", "of", "how") if m.group(g) is not None)
    start, end = m.span(name)
    whole_start, whole_end = m.span()
    text = m.group(0)
    return text[: start - whole_start] + "HOST" + text[end - whole_start:whole_end - whole_start]


@lru_cache(maxsize=64)
def _name_regex(names: tuple[str, ...]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternation = "|".join(_loose(n) for n in sorted(names, key=len, reverse=True))
    # ASCII edges: a name written against CJK text ("查看gpu01的GPU") is still the name
    return re.compile(rf"(?<![a-z0-9_.-])({alternation})(?![a-z0-9_-]|\.[a-z0-9_])", re.IGNORECASE)


def _loose(name: str) -> str:
    """A config name as people write it: any separator, or none, where the name has one ("flash_attn",
    "flash attn", "llama.cpp", "node3" for flash-attn, llama-cpp and node-3). Letters and digits stay exact."""
    return "[-_. ]?".join(re.escape(part) for part in re.split(r"[-_.]", name))


def _key(word: str) -> str:
    return re.sub(r"[-_. ]", "", word)


def config_names(config: Config) -> tuple[dict[str, str], dict[str, str]]:
    """Lower-case → canonical maps of host names and build names (a name that is both is a host)."""
    hosts = {h.lower(): h for h in config.hosts} | {g.lower(): g for g in config.groups}
    builds = {b.lower(): b for hc in config.hosts.values() for b in hc.builds if b.lower() not in hosts}
    return hosts, builds


def find_names(text: str, config: Config) -> Names:
    host_map, build_map = config_names(config)
    found_hosts: list[str] = []
    found_builds: list[str] = []

    loose_hosts = {_key(k): v for k, v in host_map.items()}
    loose_builds = {_key(k): v for k, v in build_map.items()}

    def known(m: re.Match[str]) -> str:
        word = _key(m.group(1))
        if word in loose_hosts:
            found_hosts.append(loose_hosts[word])
            return "HOST"
        found_builds.append(loose_builds[word])
        return "BUILD"

    rx = _name_regex(tuple(host_map) + tuple(build_map))
    masked = rx.sub(known, text) if rx else text
    if ALL_HOSTS_RE.search(masked):  # "status all", "memory on all hosts", "every box"
        found_hosts.append(ALL_HOSTS)
        masked = ALL_HOSTS_RE.sub(_mask_all, masked)
    masked, unknown = _mask_unknown_hosts(masked, _host_stems(tuple(config.hosts)))
    for m in reversed(list(ENV_PLACE_RE.finditer(masked))):  # "kill X on the staging cluster": not a host of ours
        unknown.insert(0, m.group("place"))
        masked = masked[:m.start("place")] + "HOST" + masked[m.end("place"):]
    return Names(unique(found_hosts), unique(found_builds), unique(unknown), masked,
                 build_mentions=tuple(found_builds))


@lru_cache(maxsize=64)
def _host_stems(hosts: tuple[str, ...]) -> frozenset[str]:
    """The letters a config host's name opens with, where digits follow ("gpu" of gpu01, "node-" of node-3):
    "on gpu02" is then a host the config does not know, not a GPU's index."""
    return frozenset(m.group(1) for h in hosts if (m := re.match(r"([a-z]+[-_.]?)\d", h.lower())))


# A deployment's place, which no host of the config is named after: "on staging", "in the prod cluster".
ENV_PLACE_RE = re.compile(r"\b(?:on|in|@) (?:the )?(?P<place>staging|stage|prod|production|preprod|pre-prod|canary"
                          r"|sandbox|uat|qa)(?: (?:cluster|box|server|machine|node|host|env|environment|fleet|farm"
                          r"|pool|vm|instance|side))?\b(?! (?:mode|build|deps|dependencies|version|branch|config))")


_DAYS_RE = re.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|weekdays?|(?:jan|febr)uary|march|april"
                      r"|may|june|july|august|(?:sept|nov|dec)ember|october")


_WHAT_RUNS_ON = re.compile(r"\b(?:whatever|everything|anything|all|stuff|things|what's|whats|what is|jobs|processes)"
                           r"(?: (?:is|that's|that is|running|still|left|else))* $")
_ON_WHAT = frozenset(("fire", "hold", "top", "purpose", "time", "track", "board", "schedule", "there", "here", "them",
                      "disk", "screen", "deck", "standby", "pause", "repeat", "loop", "autopilot"))
_END_OF_CLAUSE = re.compile(r"\s*(?:$|[.?!;,\n]|please\b|pls\b|now\b)")


def _mask_unknown_hosts(text: str, stems: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    unknown: list[str] = []

    def slot(m: re.Match[str]) -> str:
        index = next(i for i in (1, 2, 3, 4) if m.group(i))
        word = m.group(index).rstrip("._-")
        # shaped like the config's hosts; named bare after a look ("mem gpu07"), with two digits or more: "gpu1" is a
        # GPU's index there
        shaped = index in (1, 2, 4) and any(word.startswith(stem) and word[len(stem):].isdigit()
                                            and (index != 4 or len(word) - len(stem) >= 2) for stem in stems)
        # "on zaurus": a word no dictionary has, where a host goes, is a host the config does not know
        named = (index == 1 and len(word) >= 3 and word.isalpha()
                 and (not _a_known_word(word) or (_WHAT_RUNS_ON.search(text, 0, m.start()) is not None
                      and _END_OF_CLAUSE.match(text, m.end()) is not None and word not in _ON_WHAT))
                 and (m.group(0)[:1] == "@" or m.group(0)[2:3].isspace())  # not "onnxruntime"
                 and not _DAYS_RE.fullmatch(word))
        # "kill whatever is on mavericks": a word of the dictionary too, where only a machine goes
        if (not any(c.isdigit() for c in word) and not named) or (NOT_A_HOST_RE.fullmatch(word) and not shaped):
            return m.group(0)
        unknown.append(word)
        start = m.start(index)
        end = start + len(word)  # "gpu on hoth. I think …": the full stop after the name stays
        return m.group(0)[: start - m.start()] + "HOST" + m.group(0)[end - m.start():]

    return HOST_SLOT_RE.sub(slot, text), unknown


def word_set(text: str) -> frozenset[str]:
    """The words of a table written as text, one set."""
    return frozenset(text.split())


# A build-like name the config does not know, where a build's name goes: "the xformers build", "kill triton on
# HOST", "restart deepspeed". Words that describe a build ("the whole build", "the cuda build") are no names.
_NAME = r"([a-z][a-z0-9_.+-]{1,40}[a-z0-9+]|[a-z]{2})"
_CLAUSE_START = r"(?:^|(?<=[.?!;,:\n\x01]) ?)"
# ... with the words that put a request to whoever reads it: "can someone kill X on HOST", "pls just stop X"
_ASKED_START = (rf"{_CLAUSE_START}(?:(?:can|could|would|will) (?:someone|somebody|anyone|anybody|you|u|ya|we)"
                r" (?:please |pls |plz |just )?|(?:please|pls|plz) (?:just )?|just )?")
# Where a build-like name stands that the config may not know, each place with what it says of the name: "own", the
# build's own slot ("the xformers build", "kill xformers on HOST": refused even beside a known name); "log", its own
# slot before "log", where the word may say which log it is rather than whose; "beside", a name beside the request
# (refused when the message names no build of ours). Each place holds one group, the name.
_UNKNOWN_BUILD_PLACES: tuple[tuple[str, str], ...] = (
    ("own", rf"\b(?:the|my|our|that|this|a|your)(?: (?:nightly|new|old|current|latest|debug|release|main|dev|local"
            rf"|source|from-source))? {_NAME}(?: (?:python|cuda|c\+\+|pip|wheel|extension|extensions|ext"
            r"|package|module|kernel|kernels|ops|jit|aot|source|engine|colcon|bazel|cmake|meson|cargo|gradle|maven"
            r"|npm|docker|conda)){0,2}"
            r" (?:build|builds|prebuild|rebuild|rebuilds|compile|install|tests|test suite|job|jobs|wheel|wheels)\b"),
    # "deepspeed's compile on HOST"
    ("own", rf"\b(?!let's){_NAME}'s (?:build|compile|install|wheel build)\b"),
    ("log", rf"\b(?:the|my|our|that|this|a|your) {_NAME} (?:log|logs|build log)(?= (?:on|@) HOST\b)"),
    ("own", rf"{_ASKED_START}(?:kill|stop|abort|cancel|halt|terminate|rebuild|restart|retry|rerun|relaunch) (?:the )?"
            rf"{_NAME}(?= (?:on|@) HOST\b| (?:with|at|using|to) (?:-j|max_jobs|\d)| now\b| please\b|,|$)"),
    ("beside", rf"{_CLAUSE_START}{_NAME} (?:on|@) HOST\b(?=[^,;]*\b(?:status|stuck|frozen|hung|progress|far along"
               r"|alive|running|going|log|logs|oom|ooming|oom-ing|swapping|killed|dead|died|isn't|isnt|is not|won't"
               r"|keeps|throwing|throws|crash|crashed|crashes|crashing|fails|failed|failing|hangs|hanging|broke"
               r"|out of memory|unresponsive)\b)"),
    ("beside", rf"\b(?:building|compiling|installing|rebuilding|recompiling) {_NAME} (?:on|@) HOST\b"),
    ("own", rf"\b(?:re-?run|rerun|restart|retry|redo|kick off|start|kill|stop|abort|cancel|halt|terminate)"
            rf" (?:the )?(?:build|compile|install) (?:for|of) {_NAME}\b"),
    ("beside", rf"{_CLAUSE_START}{_NAME}(?: [a-z_]+\.py| build| compile| install)?(?: engine| step| process| stage)? "
               r"(?=(?:oom'?e?d|oom|ooms|oom-killed|ooming|oom-ing|ran out of memory|got oom)\b)"),
    # "don't waste time compiling koboldcpp on one core", "opencv has lack of available memory", "X stays in an
    # unresponsive state on HOST"
    ("beside", rf"\b(?:compiling|building|installing|rebuilding|recompiling) {_NAME}"
               r"(?= (?:on|with|using|from|at|for|in)\b)(?! (?:on|@) HOST\b)"),
    ("beside", rf"{_CLAUSE_START}{_NAME} (?:has|had|is|was|stays|stayed|keeps|kept|gets|got|seems|looks|hangs|hung"
               r"|runs|ran|goes|went)\b(?=[^,;.]{0,50}\b(?:memory|ram|swap|oom|stuck|hung|unresponsive|crash\w*"
               r"|fail\w*|dead|died|killed|frozen|freezing)\b)"),
    # a look at a build by its name: "status of X on HOST?", "progress on X?", "last 50 lines of X"
    ("beside", rf"{_CLAUSE_START}(?:(?:the )?(?:status|progress|eta|update|updates|news) (?:of|on|for)"
               rf"|(?:tail|(?:the )?last \d+(?: lines)? (?:of|from))) (?:the )?{_NAME}"
               r"(?=(?: build)?(?: (?:on|@) HOST)?(?: please| pls| now)?[?!.]*$)"),
    # "is X still compiling on HOST?"
    ("own", rf"{_CLAUSE_START}(?:is|are) (?:the )?{_NAME}(?: build)? still"
            r" (?:compiling|building|running|going|installing)\b"),
    # the name after the word "build": "stop build foo on HOST", "restart the build foo-full on HOST"
    ("own", rf"{_ASKED_START}(?:kill|stop|abort|cancel|halt|terminate|rebuild|restart|retry|rerun|relaunch)"
            rf"(?: (?:when|the|that|this))? (?:build|compile|job) {_NAME}(?= (?:on|@) HOST\b| now\b| please\b| pls\b"
            r"|[?!.,]*$)"),
    # the log of a build by its name, asked for: "show me the findbugs log", "tail the xformers output"
    ("log", rf"{_CLAUSE_START}(?:show|post|get|give|send|tail|grab|fetch|pull|paste|dump)(?: me| us)? (?:the )?"
            rf"{_NAME}(?: build)? (?:log|logs|output|build log)(?=[?!.]*$| please\b| pls\b| now\b)"),
    # the log asked for by the word and the name: "log xformers on HOST", "log linux 100", "logs of xformers"
    ("log", rf"{_CLAUSE_START}(?:log|logs|tail)(?: of)? (?:the )?{_NAME}(?: build)?"
            r"(?= (?:on|@) HOST\b| -?\d+\b| please\b| pls\b|[?!.]*$)"),
    # a build asked for by its verb and the name: "build xformers from source on HOST", "compile triton on HOST"
    ("own", rf"{_ASKED_START}(?:build|compile|install)(?: the)? {_NAME}(?= from source\b| (?:on|@) HOST\b| again\b)"),
    # what to stop named by its compile: "abort building opencv", "stop compiling pytorch on HOST"
    ("own", rf"{_CLAUSE_START}(?:kill|stop|abort|cancel|halt|terminate|restart|rerun|retry)(?: the)?"
            rf" (?:compiling|building|installing|compile of|build of|install of) {_NAME}"
            r"(?= (?:on|@) HOST\b| now\b| please\b| pls\b|[.!?]*$)"),
    # the subject of its trouble, in a few words: "pytorch from source is oom-ing on HOST", "nccl build stuck on HOST"
    ("beside", rf"{_CLAUSE_START}(?:the |my |our )?{_NAME}(?: (?:from source|build|compile|install|wheel"
               r"|wheel build|compilation))?(?: (?:on|@) HOST)? (?:is |was |keeps |just |has been |got |seems )?"
               r"(?:still )?(?:oom-?ing|oom'?ing|oomed|oom-?killed|swapping|thrashing|eating all|hogging|stuck|hung"
               r"|hanging|dying|crashing|failing|died|crashed|failed|frozen|wedged)\b"),
)
UNKNOWN_BUILD_RE = re.compile("|".join(place for _, place in _UNKNOWN_BUILD_PLACES))
# What a kill or a restart may be asked for that is no build: a server (also one named after the build it serves:
# "the vllm server", "llama-server"), a service, a notebook's kernel, a training run, a container, a python process.
NOT_A_BUILD_TARGET_RE = re.compile(
    r"\b(?:kill|stop|abort|cancel|halt|terminate|restart|relaunch|rerun|bounce|reboot)\s+(?:-9\s+)?"
    r"(?:(?:the|that|this|my|our|a|all|those|these)\s+)?(?:(?:BUILD|HOST's|running|stuck|old|hung|dead)\s+)*"
    r"(?:[a-z][\w.-]*\s+(?=(?:\w+\s+)?(?:server|service|container|notebook|kernel)\b))??"
    r"(?P<what>(?:(?:inference|api|model|web|http|dev|jupyter|notebook|docker|training|openai|serving)\s+)?"
    r"(?:server|servers|service|services|serve(?= process)|daemon|container|containers|notebook|jupyter|kernel"
    r"|training|inference|benchmark|tensorboard|python|pod|vm|session|tmux|screen|endpoint|workers?"
    r"|(?:runner|ci|build|gitlab|github|jenkins|buildkite) agent|agent|runners?|tests|test suite|test run|pytest"
    r"|(?:kubernetes|k8s|slurm|cron|batch|airflow) jobs?"
    r"|ctest"
    r"|[a-z][\w.]*-server)(?: process(?:es)?| run| job| session)?)\b(?! (?:build|builds|compile|install)\b)"
)
# ... or told about first, and then asked for by a pronoun: "llama-server hangs on HOST after the OOM. restart it".
NOT_A_BUILD_SUBJECT_RE = re.compile(
    r"(?:^|[.?!;,:\n] ?)(?:the |my |our |that |this )?(?P<what>[a-z][\w.]*-server|(?:(?:inference|api|model|web"
    r"|jupyter|docker) )?(?:server|service|container|notebook|training run))\b(?! (?:build|builds|compile)\b)"
)
PRONOUN_TARGET_RE = re.compile(r"\b(?:kill|stop|abort|cancel|restart|relaunch|rerun|bounce)\s+(?:it|that|this|them)\b")
# ... unless the build itself is asked for too: "restart the BUILD container and recreate the build".
BUILD_TARGET_TOO_RE = re.compile(
    r"\b(?:kill|stop|abort|cancel|restart|rebuild|recreate|rerun|retry|relaunch)\s+(?:the\s+|that\s+)?(?:BUILD\s+)?"
    r"(?:build|compile|BUILD)\b(?!\s+(?:server|servers|service|container|notebook|kernel|process|serve|tests|test suite"
    r"|test run|pytest|ctest|agent|runners?)\b)"
)
# the groups of UNKNOWN_BUILD_RE, by what their place says of the name
_OWN_SLOTS = frozenset(i for i, (kind, _) in enumerate(_UNKNOWN_BUILD_PLACES, 1) if kind != "beside")
_LOG_SLOTS = frozenset(i for i, (kind, _) in enumerate(_UNKNOWN_BUILD_PLACES, 1) if kind == "log")
# "a working build", "the passing build", "the unbounded jobs", "the uncapped build": what it is like
_DESCRIBING_RE = re.compile(r"[a-z]{3,}ing|un[a-z]{3,}(?:ed|able)"
                            # a compound adjective: "a long-running build step", "the memory-hungry build"
                            r"|[a-z]{2,}-(?:running|lived|heavy|intensive|bound|hungry|related|based|only|level|wide"
                            r"|sized|scale|time|term|lasting|running|stuck|killed|hung)")
# A model named with its version or size ("llama2-13b", "mistral-small-24b") is something a build's place can hold;
# a model family alone ("llama") is no host and may be a loose word for a build of the config, so it is no name.
_MODEL_NAME_RE = re.compile(r"(?:llama|qwen|mistral|mixtral|deepseek|gpt|glm|gemma|phi|kimi)[a-z.-]*\d[\w.-]*")
_LOG_KINDS = word_set("error errors output console system syslog dmesg journal kernel debug verbose install setup "
                      "configure compile full whole raw crash access audit boot")
NOT_A_BUILD = word_set("""
active ongoing pending queued live actual real proper complete original existing overall final backend frontend
exact precise specific usual typical keeps kept keep keeping procs proc pids threads workers
single-threaded multi-threaded single-job serialized serialised
whole entire current running last first next new old clean full release debug nightly ci docker local
incremental ninja cmake make pip wheel cuda gpu cpu kernel kernels same other stuck hung broken failed failing
big slow long main default fresh previous stupid damn rogue runaway bad latest dev prod test parallel serial
source editable offline manual partial cached second third another one python native rust go it that this
them everything all anything something nothing stuff things build builds compile job jobs process processes
memory mem ram swap status log logs gpu gpus load disk cpus cores box machine node server host system
compiler compilers linker link step thing whatever hanging frozen dead zombie stale orphan orphaned leftover
jvm java node js npm yarn cargo bazel gradle maven ccache sccache meson autotools configure setup install
package packages wheelhouse image container docker-compose kubernetes k8s vm vms wsl conda mamba venv env
is was are be been being the a an my our your their his her its to on at in of for with by from up down
there here what which who whom whose he she they we you me us him them one none nobody anybody anyone everyone
mine yours ours theirs why how when where then now today
utilization utilisation usage util temp temps temperature fan fans power traffic network io space queue vram
free ptxas cicc nvcc gcc clang g++ cc1plus ld lld mold everything nothing somebody someone
output stdout stderr error errors end lines console trace traceback backtrace progress
please pls plz thanks thx now again asap
wrong right good correct bogus bugged weird odd flaky dodgy unwanted accidental duplicate extra earlier later
smoke unit integration regression e2e functional perf performance benchmark benchmarks
unlimited excessive concurrent simultaneous extra heavy huge massive many multiple several few more less fewer
spawned background foreground remaining remote parallelised parallelized
and or but nor so if else than as also too just only not no yes ok okay
pipeline runner runners laptop desktop workstation tmux ssh sshd session terminal shell screen browser ide vscode
editor upload download network
rustc collect2 lto1 lto-wrapper cc1 as gold nvlink fatbinary cudafe cudafe++ nvidia-smi htop top kswapd apt dpkg
yum dnf pacman brew ghc javac kotlinc swiftc zig tsc esbuild webpack xcodebuild msbuild scons bitbake
compilation installation configuration deployment execution generation optimization optimisation preparation
migration conversion extraction
""")


def unknown_builds(masked: str, config: Config) -> tuple[tuple[str, ...], bool, str]:
    """Build-like names in a build's place that the config does not know; whether one stood in a build's own
    slot ("the xformers build", "kill xformers on HOST": refused even beside a known name); and the text with
    each one put as ``BUILD`` (the request is read as one for a build, then refused with what there is)."""
    hosts, builds = config_names(config)
    known = {_key(n) for n in (*hosts, *builds)}
    found: list[str] = []
    own_slot: list[bool] = []

    def slot(m: re.Match[str]) -> str:
        index = next((i for i, g in enumerate(m.groups(), 1) if g), 0)
        name = (m.group(index) or "").rstrip("._-") if index else ""
        if not name or _key(name) in known or not _could_name_a_build(name, log_slot=index in _LOG_SLOTS):
            return m.group(0)
        found.append(name)
        own_slot.append(index in _OWN_SLOTS)
        start, end = m.span(index)
        return m.group(0)[: start - m.start()] + "BUILD" + m.group(0)[end - m.start():]

    masked = UNKNOWN_BUILD_RE.sub(slot, masked)
    return unique(found), any(own_slot), masked


def _could_name_a_build(word: str, *, log_slot: bool) -> bool:
    """Could `word`, found where a build's name goes, be one? Not a word for a kind of build, a number, a
    version, toolchain or arch (a model only with its size), a gerund, or, before "log", the kind of log."""
    if word in NOT_A_BUILD or word.isdigit() or _DESCRIBING_RE.fullmatch(word) or (log_slot and word in _LOG_KINDS):
        return False
    return not NOT_A_HOST_RE.fullmatch(word) or bool(_MODEL_NAME_RE.fullmatch(word) or _PRODUCT_RE.fullmatch(word))


# Names NOT_A_HOST_RE keeps from being hosts that are builds' names all the same: "the torchvision build", "rebuild
# llama.cpp-python on HOST", "kill the torch build", "stop my cuda-samples build" (a model family alone, "the llama
# build", stays a loose word for a build of the config: see _MODEL_NAME_RE).
_PRODUCT_RE = re.compile(r"(?:torch[\w.+-]*|nccl[\w.+-]*|cuda-[a-z][\w.+-]*|llama[.-]?cpp[.-][\w.+-]+)"
                         r"(?<!-server)(?<!-serve)")


# --- names of software the config does not have, said anywhere ------------------------------------------

ENGLISH_PATH = Path(__file__).with_name("english_words.txt.gz")  # SCOWL's list (english_words.COPYRIGHT)
_NAME_TOKEN_RE = re.compile(r"(?<![\w$/.'-])([a-z][a-z0-9]*(?:[-.+][a-z0-9]+)*)(?![\w/'-])")
# Words of the trade that are in no English dictionary and name no build: tools, kernel words, chat shorthand (those
# NOT_A_BUILD already holds are not repeated here).
TRADE_WORDS = word_set("""
oom ooms oomed ooming oom-ing oom-killed oom-kill oomkiller nproc init nvtop btop gpustat dmesg journalctl systemd
systemctl sigkill sigterm sigint cgroup cgroups makeflags ninjaflags cxxflags cflags ldflags distcc icecc cudnn
cublas nccl rocm hip sm90 sm100 sm80 sm89 arch x86 x86-64 aarch64 arm64 amd64 linux ubuntu debian centos rhel macos
wsl2 swapping swappiness zram zswap tmpfs ssd nvme gb gib mb mib tb kb vcpu vcpus smi lol lmao rofl tbh imo imho
afaik iirc fwiw btw fyi ty np idk ngl rn atm smh yep nope nah hmm ugh welp oof yikes whoa ah aha heh hah kthx
kthxbye tx tyvm lmk ofc ikr wtf wth ffs omg tho af afaict borked bork borken hosed fubar kaput yeet yeeted oomkill
oomkilled oom-killer killit pwned rekt meh nvm jk brb gtg pkill killall xkill kill9 pgrep pstree pip3 uv uvx pipx
poetry wheels sdist setuptools gmake autoconf automake repo repos git github gitlab cd devops infra sre oncall
wat wut wot whatcha gonna wanna gotta dunno lemme gimme plz pls thx tho ur u r y k ok okie sry pic pics info stats
""")


_CODE_LIKE_RE = re.compile(r"[a-z]{1,2}\d+[a-z]?")  # "j12", "sm90", "v2", "a100": a flag, an arch, a version


@lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    import gzip

    return frozenset(gzip.decompress(ENGLISH_PATH.read_bytes()).decode().split())


def _is_english(word: str) -> bool:
    """In the dictionary, inflected ("killable", "reaped"), or behind a prefix ("reparented", "unkillable")."""
    english = _english()
    return _is_english_word(word, english) or any(
        word.startswith(prefix) and len(word) - len(prefix) > 3 and _is_english_word(word[len(prefix):], english)
        for prefix in ("re", "un", "pre", "non", "over", "under", "sub", "auto", "multi", "mis", "de", "self-"))


def _is_english_word(word: str, english: frozenset[str]) -> bool:
    if word in english:
        return True
    for ending, back in (("'s", ""), ("n't", ""), ("s", ""), ("es", ""), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("ies", "y"), ("ied", "y"), ("er", ""), ("ers", ""), ("ly", ""),
                         ("able", ""), ("able", "e"), ("ible", "")):
        if word.endswith(ending) and word[: -len(ending)] + back in english:
            return True
    return False


def product_names(masked: str) -> tuple[str, ...]:
    """Words of ``masked`` that can only be names (of software, most often): in no English dictionary, no word of
    the trade, no word rigops reads, no config name (those are ``HOST`` and ``BUILD`` already): "xformers",
    "deepspeed", "mmcv-full", "gt4py"."""
    found = [word for word in _NAME_TOKEN_RE.findall(masked)
             if len(word) >= 3 and not _CODE_LIKE_RE.fullmatch(word) and not _a_known_word(word)
             and not (any(c in word for c in "-.+")  # "ld.gold", "x86-64", "oom-killed": known words joined
                      and all(_a_known_word(part) or part.isdigit() for part in re.split(r"[-.+]", word) if part))]
    return unique(found)


def _a_known_word(word: str) -> bool:
    return word in TRADE_WORDS or word in NOT_A_BUILD or _is_english(word)


def unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# --- numbers -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    """A number as written in chat: its (capped) value and how to show it in an error."""

    value: int
    shown: str

    @classmethod
    def of(cls, digits: str, template: str) -> Number:
        """``digits`` as a rule captured it; an expression ("$(nproc)/2") is out of every bound, so it is
        refused like -j0, with an error that says why."""
        if not DIGITS_RE.fullmatch(digits):
            return cls(UNWORKABLE, template.format("…") + UNWORKABLE_NOTE)
        neg, bare = digits.startswith("-"), digits.lstrip("-")
        if len(bare) > MAX_DIGITS:
            value, bare = 10**MAX_DIGITS, bare[:MAX_DIGITS] + "…"
        else:
            value = int(bare)
        sign = "-" if neg else ""
        return cls(-value if neg else value, template.format(f"{sign}{bare}"))


# --- the last reading of a message said to rigops ---------------------------------------------------------

# Said to rigops, a message that no rule read and none set aside still names what it wants to see: "job status
# gpu01", "tailable build logs for BUILD?", "List of running builds on HOST", "显存占用". Only looks, never a kill
# or a rebuild: a guess may show something, it never stops anything.
_FALLBACK_LOOKS = (
    ("gpu", re.compile(r"\b(?:gpus?|vram|nvidia-?smi|nvidiasmi|cuda memory)\b|显存|显卡")),
    ("mem", re.compile(r"(?<!gpu )(?<!cuda )(?<!v)\b(?:mem|memory|ram|swap|free -[hmg]|oom)\b|内存")),
    ("status", re.compile(r"\b(?:status|progress|progressing|state|how far|stuck|hung|building|compiling|updating"
                          r"|running builds"
                          r"|running jobs|still running|alive)\b|进度|状态")),
    ("log", re.compile(r"\b(?:logs|logfile|log file|output(?! of (?:the )?(?:nvidia-smi|free|df|htop|top|btop|vmstat"
                       r"|ps|dmesg)\b)|tailable|tail)\b|(?<!^)\blog\b|日志")),
)


# A count given as a formula next to the word for the jobs, in a request to change them: what rigops cannot
# work out from chat ("set jobs to n_cpus + 2", "-j `nproc`", "the number of logical cores", "-j by itself").
_FORMULA = (r"(?:\$\(|\$expr\b|`nproc`|\bnproc\b(?! (?:says|said|shows|showed|reports|returns|returned|gives|gave"
            r"|prints|printed|is|was|output|outputs) )|\bn_?cpus?\b|\bncores\b"
            r"|\b(?:number|amount|count) of (?:\w+ ){0,2}"
            r"(?:cores|cpus|processors|threads|gpus|cards|devices|sockets)\b"
            r"|#\s?(?:of )?(?:cores|cpus|procs|processors|threads)\b"
            r"|\bnum[ _]?(?:of[ _])?(?:cores|cpus|procs|threads)\b|\b(?:core|cpu|thread) count\b|\bdivided by\b"
            r"|\bwhere n\b|\bmemory budget\b"
            r"|\bbased on (?:the )?(?:available |free )?(?:memory|ram|cores|cpus|core count)\b"
            r"|(?<![\w-])-j(?: by itself|`| \(no number\)|\s*$|\n"
            r"| (?:with|without) (?:no |a |an |any )?(?:number|explicit|limit|count|argument|integer))"
            r"|\bas many (?:jobs|threads|processes) as (?:possible|it can|it wants)\b)")
JOBS_AS_FORMULA_RE = re.compile(
    r"\b(?:use|using|set|unset|replace|switch|change|rebuild|restart|rerun|retry|relaunch|recompile|cap|parallelize"
    r"|parallelise|make|run|remove|pass|add|adding|speed up)\b"
    r"[^.;?!\n]{0,60}?(?:-j|\bjobs?\b|\bparallel\w*|\bcores\b|\bthreads\b"
    r"|\bj (?:param|parameter|value|flag|option)\b)"
    rf"[^.;?!\n]{{0,40}}?{_FORMULA}"
    rf"|\b(?:use|set|replace|switch|change|rebuild|restart|rerun|retry|cap)\b[^.;?!\n]{{0,30}}?{_FORMULA}"
    r"[^.;?!\n]{0,40}?"
    r"(?:-j|\bjobs?\b|\bparallel\w*)"
    rf"|(?:\b(?:use|using|pass|add|adding)\b|->|=>)[^.;?!\n]{{0,20}}?{_FORMULA}"
    # "run ninja with -jNUM_PHYS_CORES", "build X on half of `$NIX_BUILD_CORES`"
    r"|\b(?:run|build|compile|rebuild|retry|rerun|restart) (?:[\w-]+ ){0,3}?(?:with|on|at|using)"
    r" (?:(?:half|a third|a quarter|twice|double) (?:of )?)?\$expr"
    r"|\b(?:with|using) (?:make |ninja |cmake --build (?:\S+ )??)?(?<![\w-])(?:-j|--parallel)(?=\s*$| \(no number\)"
    r"| (?:with|without) )"
    # "determine the number of cores on HOST and use that"
    rf"|\b(?:determine|detect|compute|calculate|figure out|find out|count|check)\b[^.;?!\n]{{0,20}}?{_FORMULA}"
    r"[^.;?!\n]{0,40}?\buse (?:that|it|this|them)\b"
)
# A formula where the jobs go, with no verb: "-j $(nproc)", "MAX_JOBS=nproc", "the param should be #cores + 1".
JOBS_FORMULA_SLOT_RE = re.compile(
    rf"(?:-j|\bmax_jobs|\bjobs?|\bparallel(?:ism)?|\b(?:param|parameter|setting|flag|value) (?:should be|is|=))"
    rf"\s*(?:=\s*|:\s*)?#?\s*{_FORMULA}"
    # the jobs set by what the host has: "limit the number of jobs for BUILD based on memory"
    r"|\b(?:jobs|-j|parallelism|job count)(?: (?:for|of|on) (?:BUILD|it|the build))?,? based on (?:the )?"
    r"(?:available |free )?(?:memory|ram|cores|cpus|core count)\b"
    # a multiple of the cores, or as many as memory lets: "with 2x cores", "as many jobs as RAM allows"
    r"|\b(?:\d{1,2} ?x|twice|double|triple) (?:the )?(?:cores|cpus|threads|core count|cpu count|nproc)\b"
    r"|\bas many (?:jobs|threads|processes|compiles) as (?:the )?(?:ram|memory|mem|box|machine|host|HOST)"
    r" (?:allows|permits|can take|can handle|fits|lets)\b")
# The jobs slot filled with words for the host's size, not a number: "MAX_JOBS equal to free memory over 4", "max jobs
# = the cores", "-j at whatever keeps it under 80% of the ram", "as many jobs as it takes": in a rebuild, refused.
JOBS_SLOT_IN_WORDS_RE = re.compile(
    r"(?:\bmax_jobs|\bmax jobs|(?<![\w-])-j|\bjobs|\bparallelism|\bjob count)\s*(?:=|:|\bset to\b|\bequal to\b"
    r"|\bequals\b|\bto\b|\bat\b)\s*\(?\s*(?:the |a |an |about )?(?:free |available |total |physical |logical "
    r"|host's |machine's )?(?:memory|ram|mem|cores?|cpus?|threads|processors|whatever|\$expr)\b"
    r"|\bwhatever (?:-j|jobs?|count|number|parallelism)\b[^.;?!\n]{0,30}\b(?:keeps|fits|stays|works|lets)\b"
    r"|\bas many (?:jobs|threads|processes) as (?:it takes|needed|will fit|fit)\b"
    # "MAX_JOBS should be about RAM/4GB", "a -j matching your RAM", "max jobs derived from the available memory",
    # "the -j the docs recommend", "the same -j as CI": a count that is not said
    r"|(?:\bmax_jobs|\bmax jobs|(?<![\w-])-j|\bjobs|\bjob count) (?:should be|must be|needs to be|ought to be)"
    r" (?:about |around |roughly |approximately |~)?(?:\$expr|the |your |ram|memory|cores|cpus)"
    r"|(?:\bmax_jobs|\bmax jobs|(?<![\w-])-j|\bjobs|\bjob count) (?:matching|derived from|according to|depending on"
    r"|proportional to|scaled to|that (?:matches|fits)|corresponding to|equivalent to|in line with|based on)\b"
    r"|\bthe same (?:-j|jobs|max_jobs|job count|number of jobs) as\b"
    # "max out the cores", "one fewer job than cores", "the cpu count minus two", "twice as many jobs as GPUs",
    # "let ninja decide the jobs", "MAX_JOBS unset"
    r"|\b(?:max(?:imize)? out|use up|saturate) (?:the |all (?:the |of the )?)?(?:cores|cpus|threads)\b"
    r"|\b(?:one|two|three|\d{1,2}) (?:fewer|less|more) (?:jobs?|threads?|processes) than (?:the )?(?:cores|cpus"
    r"|threads|nproc|core count|cpu count)\b"
    r"|\b(?:cpu|core|thread|gpu|processor) count (?:minus|plus|less|times|divided by|over)\b"
    r"|\b(?:twice|double|three times|thrice|half|\d{1,2} ?x) as many (?:jobs|threads|processes|workers) as\b"
    r"|\blet (?:ninja|make|cmake|cargo|bazel|pip|gradle|it|the build|BUILD) (?:decide|pick|choose|figure out)\b"
    r"|\b(?:ninja|make|cmake|cargo|bazel|pip|gradle|meson)(?:'s)? (?:own )?default (?:-j|jobs|parallelism"
    r"|job count|number of jobs)\b"
    r"|\bmax_jobs (?:unset|empty|blank)\b|\bunset (?:the )?max_jobs\b"
    r"|(?:\bmax_jobs|(?<![\w-])-j|\bjobs|\bjob count) (?:the|that) (?:docs?|readme|guide|ci|wiki|manual) (?:recommends?"
    r"|says|suggests|uses)\b")
# Talk of the machine's cores in a rebuild whose count was not read: the count was said as what the machine has
# ("rebuild vllm with one job per core minus the two we keep for I/O"), in words no table holds; refused, never run
# with the default.
CORE_TALK_RE = re.compile(r"\$expr|\bnproc\b|\b(?:cores?|cpus?|vcpus?|threads|processors|hyperthreads|cpu_count"
                          r"|core count|cpu count)\b")
# A count said as a number anywhere in the message: "-j32", "16 jobs", "MAX_JOBS=8".
SAID_COUNT_RE = re.compile(r"(?<![\w-])-j ?\d{1,4}\b|\b\d{1,4} (?:jobs|threads|cores|workers)\b|\bmax_jobs ?= ?\d")
# A range or a bound where one count goes ("4-8 jobs", "6 to 8 jobs", "-j between 4 and 8", "less than 8 jobs"): which
# count is meant is not said, so in a rebuild it is refused, never run with one end of it.
JOBS_RANGE_RE = re.compile(
    r"(?<![\w.-])(?<!from )(?:-j ?)?\d{1,4} ?(?:-|–|to) ?\d{1,4} (?:parallel |compile |build )?"
    r"(?:jobs|threads|cores|procs|workers)\b"
    r"|(?:(?<![\w-])-j|\bjobs|\bmax_jobs|\bparallelism) (?:of |at )?between (?:-j ?)?\d{1,4} and (?:-j ?)?\d{1,4}\b"
    r"|\bbetween (?:-j ?)?\d{1,4} and (?:-j ?)?\d{1,4} (?:jobs|threads|cores)\b"
    r"|(?<!from )(?<![\w-])-j ?\d{1,4} ?(?:-|–|to) ?(?:-j ?)?\d{1,4}\b")
# A count described, not said, in a rebuild that reads no number: "as many jobs as GPUs", "half the previous -j",
# "1/16th of the cores", "the default minus 4", "at 16/2", "-j%NUMBER_OF_PROCESSORS%", "a couple fewer jobs".
COUNT_DESCRIBED_RE = re.compile(
    r"\bas many (?:jobs|threads|processes|compiles|workers|compile jobs) as\b"
    r"|\b(?:half|a third|a quarter|a fraction|two thirds|three quarters|double|twice|triple|\d{1,3} ?%"
    r"|\d{1,2}/\d{1,2}(?:th|rd|nd|st)?)(?: of)? (?:the |its |our |all (?:the )?)?"
    r"(?:previous |current |old |last |usual |default )?(?:cores|cpus|threads|processors|jobs|-j|core count|cpu count"
    r"|nproc|max_jobs|parallelism|count|default|value)\b"
    r"|\b(?:the )?(?:default|usual|current)(?: -j| jobs| count| value)? ?(?:minus|plus|-|\+|/|\*|times|divided by|over"
    r"|less) ?(?:\d|one|two|three|four|half)"
    r"|(?<![\w-])-j ?%\w+%|%number_of_processors%"
    r"|\b(?:max_jobs|jobs|-j|parallelism)\s*(?:=|to|at)\s*(?:half|double|twice|max|auto|all|full)\b|\bat half\b"
    r"|\b(?:at|with|to|-j)\s?\d{1,4} ?(?:/|\^) ?\d{1,4}\b"
    r"|\b(?:a few|a couple(?: of)?|several|a handful of|\d{1,2}|one|two|three|four) (?:fewer|less|more) (?:jobs|threads"
    r"|processes)\b(?! than)"
    r"|\bwith (?:a few|a couple(?: of)?|several|a handful of|some) (?:jobs|threads)\b"
    # a load limit where the count goes: "make -j -l 16", "--load-average=16"
    r"|(?<![\w-])-l ?\d|--load-average|\bload (?:average|limit)\b")
# Two counts offered where the count read goes: "rebuild at 8 or 10", "at 8, 10 if it's fast", "like 8 maybe 10".
_NOT_A_COUNT_UNIT = (r"(?! ?(?:gb|g|gib|%|mins?|minutes|hours?|h|am|pm|tb|m|mb|secs?|seconds|x|days?|gpus?|nodes?"
                     r"|hosts?|boxes|builds?|times)\b)")
COUNT_ALTERNATIVES_RE = re.compile(
    rf"(?<![\w.-])(?:-j ?)?(?P<first>\d{{1,4}}) ?(?:or|maybe|/) ?(?:maybe |even |perhaps |-j ?)?\d{{1,4}}\b"
    rf"{_NOT_A_COUNT_UNIT}"
    rf"|(?<![\w.-])(?:-j ?)?(?P<listed>\d{{1,4}}), ?(?:maybe |even |perhaps |-j ?)?\d{{1,4}}\b{_NOT_A_COUNT_UNIT}"
    r"(?= ?(?:if|maybe|or|would|might|should|tops|max|at most|[.!?]|$))")
JOBS_BOUND_RE = re.compile(
    r"\b(?:less|fewer|lower|smaller) than (?:-j ?)?\d{1,4}(?: jobs| threads| cores)?\b"
    r"|\b(?:max_jobs|-j|jobs) (?:lower|less|smaller|below|under) (?:than )?\d{1,4}\b")
# ... and a bound above, where the count goes: "try X with more than just two jobs" (the two is no count asked).
JOBS_MORE_THAN_RE = re.compile(
    r"\b(?:with|at|use|using|try) (?:(?:a lot|way|many|much|a bit|slightly) )?(?:more|higher|greater|bigger) than"
    r" (?:just |only |the )?(?:-j ?)?\d{1,4}(?: jobs| threads| cores| workers)?\b(?!\s*(?:%|percent|gb|g|gib|mb)\b|%)")
# A count that is no whole number ("-j 1,5", "2.5 jobs") or is negative in words ("at minus 4"): refused as said.
ODD_COUNT_RE = re.compile(
    r"(?<![\w.,-])(?:-j ?|max_jobs ?= ?|jobs ?= ?)\d{1,4}[.,]\d{1,3}(?![\d.,]*\d)"
    r"|(?<![\w.,])\d{1,4}[.,]\d{1,3} (?:jobs|threads|cores|procs|workers|parallel jobs)\b"
    r"|\b(?:at|with|to|use|-j) minus \d{1,4}\b")
# What comes after "instead of" is what is replaced: "-j2 instead of -j", "use that instead of passing -j8".
INSTEAD_TAIL_RE = re.compile(r"\b(?:instead of|rather than|in place of)\b[^.;?!\n]*")
# A count given with a bound rigops cannot work out: "16 threads or the number available, whichever is smaller",
# "min(16, nproc)". The number beside it is not the count asked for.
COUNT_BOUND_BY_FORMULA_RE = re.compile(
    r"\bwhichever is (?:smaller|less|lower|fewer|the smallest|the lowest|greater|larger|bigger|higher|more"
    r"|the largest|the highest)\b|\b(?:min|max)\s*\(\s*\d+\s*,|\b(?:min|max)\s*\([^)]{0,20}\bnproc\b")
# A clause that tells a build failed ("X test crashes", "vllm fails with `file truncated`"): a bare "again" after it
# says how often, and "build with 40 jobs" after it the setup it failed in — neither is a request.
FAILED_NOW_RE = re.compile(r"\b(?:crash(?:es|ed)?|fail(?:s|ed)?(?: with| at| on)?|died|dies|broke|breaks|oom(?:s|ed)?"
                           r"|segfaults?|errors? out|blows? up)\b")
SETUP_AFTER_FAILURE_RE = re.compile(r"^(?:build|built|building|compiled?|compiling|make) (?:with|at|using)\b")
# A question about what rigops does by itself ("will you kill a build automatically if …?"): how it works.
ON_ITS_OWN_RE = re.compile(r"\b(?:automatically|whenever|on (?:its|your) own|by (?:it|your)self|auto-?)\b"
                           # "when you rebuild X, does the old log get overwritten?": how rigops does what it does
                           r"|^(?:when|whenever|after|if) (?:you|rigops) \w+\b[^?]*\b(?:does|do|will|is|are|would|can"
                           r"|did)(?: (?:it|the|that|this|its|you|my|a)\b)"
                           # (not "when you type nvidia-smi on X what does it show?": that asks to see it)
                           r"(?<!what does it)(?<!what do they)(?!\s*(?:show|say|print|give|output|report)\b)")
# A worry that a build is not moving, set aside as a negation, still asks how it is doing when said to rigops:
# "looks like BUILD is not updating", "it doesn't seem like BUILD is building".
SEEMS_STALLED_RE = re.compile(
    r"(?:\bnot|n't|\bno longer|\bnever)(?: (?:seem|look|appear)s?(?: (?:like|to be))?)?(?: (?:it|BUILD|the build|HOST)"
    r"(?: is| are|'s)?)?(?: (?:still|again|even|really))? (?:updating|building|progressing|moving|running|compiling"
    r"|doing anything|making progress|finishing|responding)\b"
    # "my build is not showing any update for a while now", "hasn't printed anything in 20 minutes"
    r"|(?:\bnot|n't|\bno longer) (?:showing|shown|printing|printed|outputting|output|logging|logged|producing"
    r"|produced|moved|budged)(?: (?:any|anything|a|an|any new|new|the))?"
    r"(?: (?:update|updates|progress|output|lines?|logs?|anything|sign of life))?\b"
)
_FALLBACK_ASK_RE = re.compile(r"\b(?:please|pls|plz|check|show|list|print|monitor|see|track|tracking|view|display"
                              r"|can you|could you|let me know|tell me|give me|need to know|want to know"
                              r"|like to know)\b|查看|看看|请")


_FALLBACK_HOW_TO_RE = re.compile(r"\b(?:is it (?:necessary|possible|required|ok|safe)|can (?:it|i|we|you) be"
                                 r"|how (?:do|can|should|to)|do (?:i|we) need|is there (?:a|some|any) (?:way|tool)"
                                 r"|what(?:'s| is) the best|should i)\b")


def fallback_looks(masked: str) -> list[str]:
    """The looks a message names, in the order it names them (``log`` as the first word is the verb "log X",
    as in "log VRAM usage on HOST", not the build log)."""
    text = masked.replace(LEAD_MARK, " ").strip()
    if _FALLBACK_HOW_TO_RE.search(text):
        return []  # "is it necessary to build X on a box with GPUs?": a question about how, not a look
    stalled = SEEMS_STALLED_RE.search(text) is not None
    if not ("?" in text or _FALLBACK_ASK_RE.search(text) or len(text.split()) <= 5 or stalled):
        return []  # a remark said to rigops ("for the record, RAM goes …") asks to see nothing
    found = [(m.start(), action) for action, rx in _FALLBACK_LOOKS if (m := rx.search(text))]
    # news of a build that stalled, said to rigops, asks where it is: "my build has been stuck for a while now"
    return [action for _, action in sorted(found)] or (["status"] if stalled else [])

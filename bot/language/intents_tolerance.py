"""Typos and slang, for ``bot.language.intents``: the words people really type, read as the few the rules know.

Two steps, both on normalised (lower-case) text and both linear in its length:

- :func:`slang` rewrites a bounded table of ops-channel slang to the plain verb ("yank the build", "^C it",
  "fire it up again", "abort mission on X"); a phrase is replaced only as whole words;
- :func:`correct` mends one-letter typos of the fixed vocabulary ("stpo", "biuld", "rebiuld", "memeory"): a word
  is mended when it is one edit (a letter dropped, added, changed, or two swapped) away from a vocabulary word,
  is at least five letters long (four-letter words only by a swap), and is not itself an English word of that
  shape ("skill" stays "skill", "still" stays "still", "shop" stays "shop"). The English words one edit away
  from the vocabulary were listed once from the GCIDE dictionary, with the plurals ops people write, and again
  from the 60,000 most frequent English words (wordfreq): every one that would have been "mended" ("finishes",
  "willing", "states", "crashes", "shopping") is listed, so none is.

Config names are matched through separators in ``bot.language.intents_words`` ("flash_attn", "llama.cpp", "node3").
"""

from __future__ import annotations

import re
from functools import lru_cache

from bot.language.intents_words import word_set

# --- slang ---------------------------------------------------------------------------------------------

_IT = r"(?:it|that|this|the build|the compile|the thing|the BUILD build|the BUILD|BUILD build|BUILD|HOST)"
SLANG: tuple[tuple[re.Pattern[str], str], ...] = (
    # stop it
    (re.compile(r"(?:\^c|ctrl[- +]?c|control[- +]c)\b(?= (?:it|that|this|the|BUILD|HOST)\b|$)"), "kill"),
    (re.compile(r"\b(?:yank|yeet|nuke|murder|whack|axe|zap|sigkill|sigint|kill -9|pkill|killall)\b"
                r"(?= (?:it|that|this|the|my|our|all|every|those|these|BUILD|HOST|them|everything)\b|$)"
                r"|(?:^|(?<=[.?!;,:\n])|(?<=[.?!;,:\n] ))(?:yank|yeet|nuke|axe|zap)\b(?= [a-z])"),
     "kill"),
    (re.compile(rf"\bshoot {_IT} in the head\b|\bput {_IT} out of (?:its|it's) misery\b"), "kill it"),
    (re.compile(r"\bpull the plug(?: on)?\b"), "kill"),
    (re.compile(r"\b(?:stahp|stawp|stapp)\b"), "stop"),
    # "make it stop", "get rid of the X build", "X needs to die", "I want X gone", "put it out of action"
    (re.compile(rf"\bmake {_IT} stop\b"), "stop it"),
    (re.compile(r"\bget rid of\b(?= (?:the |that |this )?(?:BUILD|it|build|compile)\b)"), "kill"),
    (re.compile(r"\b(BUILD|it|the build|the BUILD build) (?:needs|has|have) to (?:die|go|be killed|be stopped)\b"),
     r"kill \1"),
    (re.compile(r"\bi want (BUILD|it|the build|the BUILD build) (?:gone|dead|killed|stopped)\b"), r"kill \1"),
    # asked in the passive: "can vllm be restarted with -j4?", "could it be stopped", "X needs to be rebuilt"
    (re.compile(r"\b(?:can|could|would) (BUILD|it|the build|the BUILD build) (?:please )?be (?:killed|stopped"
                r"|cancell?ed|aborted|terminated)\b"), r"can you kill \1"),
    (re.compile(r"\b(?:can|could|would) (BUILD|it|the build|the BUILD build) (?:please )?be (?:restarted|rebuilt"
                r"|rerun|relaunched|retried|recompiled)\b"), r"can you rebuild \1"),
    (re.compile(r"\b(BUILD|it|the build|the BUILD build) (?:needs|has) to be (?:restarted|rebuilt|rerun"
                r"|relaunched|retried|recompiled)\b(?![^.;!?\n]{0,40}\bby (?!hand\b|tomorrow\b|tonight\b))"),
     r"rebuild \1"),  # not "… by someone on the infra team"
    (re.compile(rf"\bput {_IT} out of action\b"), "kill it"),
    (re.compile(r"\b(?:forcefully|forcibly|force-)(?= (?:cancel|kill|stop|abort|terminate))"), "force"),
    (re.compile(r"\bforce (?:it|BUILD|the build) to (rebuild|recompile|rerun|restart)\b"), r"\1 it"),
    (re.compile(r"\bshut (?:down|off)\b(?= (?:the|that|this|BUILD|it)\b)"), "stop"),
    (re.compile(rf"\bgive {_IT} the (?:boot|axe|chop)\b"), "kill it"),
    (re.compile(r"\babort mission\b(?: on)?"), "abort"),
    (re.compile(r"\btake (?:down|out)\b(?= (?:the|BUILD|it)\b)"), "kill"),
    # start it again
    (re.compile(rf"\b(?:fire|spin|start|kick|boot) {_IT}(?: back)? (?:up|off)(?: again| once more| back up)?\b"),
     "run it again"),
    (re.compile(r"\b(?:fire|spin|kick|firing|spinning|kicking) (?:up|off) (BUILD|the BUILD build|BUILD build)"
                r" again\b"), r"rebuild \1"),
    (re.compile(rf"\b(?:fire|spin|kick) (?:up|off) {_IT} again\b|\bkick {_IT} again\b"), "run it again"),
    (re.compile(r"\b(?:kick|fire|spin) (?:it |that |BUILD )?(?:back )?(?:off|up) again\b"), "run it again"),
    (re.compile(rf"\bsend {_IT} again\b"), "retry it"),
    (re.compile(rf"\bstart {_IT} (?:again|over|back up)\b"), "rerun it"),
    (re.compile(rf"\bbounce {_IT}\b"), "restart it"),
    (re.compile(r"\bput (BUILD|it|the build|the BUILD build) back (?:on|up)\b"), r"restart \1"),
    # "give vllm 2000", "give it 8 jobs": the count to run it with
    (re.compile(r"(?:^|(?<=[.!,;:\n] ))give (BUILD|it) (?:-j ?)?(\d{1,6})(?: (?:jobs|threads|cores|workers))?"
                r"(?= please| pls| now|\s*[.!]*$)"), r"rebuild \1 with \2 jobs"),
    (re.compile(rf"\bbring {_IT} back(?: up| online)?\b(?= with| at| using|$| please| now| again|[.,!])"),
     "restart it"),  # "… got OOM-killed again. bring it back with 8"
    (re.compile(r"\bgive (BUILD|the build|the BUILD build|it) a (?:kick|nudge|poke)\b"), r"retry \1"),
    (re.compile(r"\b(?:respin|re-?kick|re-?fire|redo)\b(?= (?:it|that|this|the|BUILD)\b|$)"), "rebuild"),
    (re.compile(rf"\breboot {_IT}\b(?<!HOST)"), "restart it"),
    (re.compile(r"\b(?:take|have|give it) another (?:go|shot|stab|crack|swing)\b"), "retry"),
    (re.compile(r"\bgive (BUILD|the build|the BUILD build) (?:another|one more)"
                r" (?:go|shot|spin|try|run|whirl|crack)\b"),
     r"retry \1"),
    (re.compile(r"\bgo again (?:on|with) (?=BUILD\b)"), "rebuild "),
    (re.compile(r"\b(?:a|another|one more) (?:re-?run|retry|rebuild|restart) (?:of|for) (?=BUILD\b|the build\b)"),
     "rebuild "),
    (re.compile(r"(?:^|(?<=[.,;:!?] ))((?:please |pls |can you |could you )?)(?:resume|continue|pick up) (?:the |my )?"
                r"(BUILD|the build)(?: build)?\b(?! (?:is|was|will|can|should|until|till)\b)"), r"\1rebuild \2"),
    (re.compile(r"(?:^|(?<=[,;:] ))from the top\b"), "start over"),
    # ... not the subject of what it did: "another go at 6 sorted it", "another spin at 4 did nothing"
    (re.compile(r"(?:^|(?<=: )|(?<=, ))(?:one more|another) (?:go|shot|stab|crack|swing|spin|pass|round)\b"
                r"(?!(?: (?:at|with|on|for) [\w-]+(?: jobs)?){0,2} (?:sorted|fixed|did|does|worked|works|helped|helps"
                r"|got|made|was|is|will|would|won't|might|could|seems|went|failed|passed|solved|killed|died|crashed"
                r"|oom\w*|should)\b)"), "retry"),
    # a queue's or a CI's words for it: "requeue X", "resubmit it", "cycle the X build", "hit retry on X"
    (re.compile(r"\b(?:re-?queue|re-?submit|re-?cycle|cycle|re-?spawn)\b(?= (?:it|that|this|the|BUILD)\b|$)"),
     "rerun"),
    (re.compile(r"\b(?:hit|press|push|click|smash) (?:the )?(rebuild|retry|rerun|restart)(?: button)? (?:on|for)\b"),
     r"\1"),
    # chat shorthand: "kill n restart", "whr is it at"
    (re.compile(r"\b(kill|stop|cancel|abort)(?: it)? (?:n|'n'|&|\+) (restart|rebuild|retry|rerun)\b"), r"\1 and \2"),
    (re.compile(r"^(?:whr|wher|whre)\b"), "where"),
    (re.compile(r"\b(?:chk|chek|chck)\b"), "check"),
    (re.compile(r"\b(?:teh|hte)\b"), "the"),
    (re.compile(r"\b(?:lgo|olg)\b"), "log"),
    # how often, not a request to go again: "failing again and again", "over and over"
    (re.compile(r"\b(?:again and again|again &(?:amp;)? again|over and over(?: again)?|time and (?:time )?again)\b"),
     "repeatedly"),
    # "and" mistyped between two things to look at: "the mem ans swap", "logs adn status"
    (re.compile(r"\b(mem|memory|ram|swap|logs?|gpus?|status|progress) (?:ans|adn|nad|annd) (?=(?:the )?(?:mem|memory"
                r"|ram|swap|logs?|gpus?|status|progress)\b)"), r"\1 and "),
    # "free memory across all Nvidia GPUs": the GPUs' memory, not the host's
    (re.compile(r"\b(?:free |used |available )?memory (?:usage )?(?:across|of|on|for|in) (?:all |each |every |the )*"
                r"(?:nvidia |cuda )?(?:gpus?|cards?|devices)\b"), "gpu memory"),
    # "would you mind recompiling X?": the verb the gerund is
    (re.compile(r"\b(?:would|could) (?:someone|somebody|anyone|anybody|one of (?:the|you|us) (?:maintainers|admins"
                r"|folks|guys|devs|ops|on-?call|people)|one of you) mind\b"), "could someone"),
    (re.compile(r"\b(would you mind|do you mind|mind|could you try|try) (rebuild|restart|relaunch|kill|abort|cancel"
                r"|check|show|post|tail|grab|fetch)ing\b"), r"\1 \2"),
    (re.compile(r"\b(would you mind|do you mind|mind|could you try|try) (recompil)ing\b"), r"\1 \2e"),
    (re.compile(r"\b(would you mind|do you mind|mind|could you try|try) (stop|rerun)[pn]ing\b"), r"\1 \2"),
    # "could you rerun your gpu check on HOST?": the look again, not a rebuild; "hitting restart on it": the restart
    (re.compile(r"\b(?:re-?run|redo|repeat) (?:the |your |that |a |another )*(gpus?|memory|mem|ram|swap|status)"
                r" (?:check|look|query|report)\b"), r"check \1"),
    (re.compile(r"\b(?:hit|hitting|press|pressing|click|clicking|smash|smashing) (?:the )?(restart|rebuild|retry|rerun"
                r"|re-run|cancel|stop|abort|kill)(?: button)? on\b"), r"\1"),
)
# nvidia-smi's own column names, read so in a message about the GPUs: "Memory-Usage" is the cards' memory,
# "Volatile GPU-Util" their load ("gpu01's cards show Memory-Usage but 0% GPU-Util").
NVIDIA_SMI_COLUMNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![a-z-])memory-usage(?![a-z-])"), " vram usage "),
    (re.compile(r"(?<![a-z-])(?:volatile )?gpu-util(?![a-z-])"), " gpu util "),
)
GPU_TALK_RE = re.compile(r"\b(?:gpus?|nvidia(?:-?smi)?|cards?|vram)\b|显卡|顯示卡|显存")


# Chinese and Japanese words for what the rules read, put in the English the rules know: the request (a rebuild, a
# clean start, a look at memory, the GPUs, the log's last lines), the politeness that makes it one, and the words
# that make it a story ("yesterday", "last time"). Nothing else is translated: a sentence the table does not cover
# stays unread, which never acts.
CJK: tuple[tuple[re.Pattern[str], str], ...] = (
    # the count changed to: "将 X 的并行改成 8" (set X's jobs to 8), "sgl-kernel换成-j8吧"; never what was done ("我刚
    # 改成 -j8 了")
    (re.compile(r"(?:^|(?<=\s))将\s*(\S+?)\s*的\s*(?=并行|线程|编译)"), r"set \1 "),
    (re.compile(r"(?<!刚)(?<!已)(?<!经)(?:并行(?:数|度)?|(?:编译)?线程数?)\s*(?:换成|改成|改为|设成|设为|调成|调到|降到|改到)\s*"
                r"(?![^\n]*了)"), " jobs to "),
    (re.compile(r"(?<!刚)(?<!已)(?<!经)\s*(?:换成|改成|改为|设成|设为|调成|调到|降到|改到)\s*(?![^\n]*了)"),
     " change it to "),
    (re.compile(r"(?<=\d)\s*吧"), " please"),
    (re.compile(r"(?:一旦|先)?(?:(?:build|ビルド)(?:ディレクトリ|フォルダ|目录|文件夹)?を? ?)?"
                r"(?:削除|消去)(?:してから|して|後に)"
                r"|(?:build|ビルド)(?:ディレクトリ|フォルダ)?を? ?消してから"
                r"|(?:先)?(?:删除|清理|清空|删掉)(?:build ?)?(?:目录|文件夹)?(?:后|之后|然后|再)"),
     " wipe the build dir, then "),
    # "取消当次构建并启动新构建" (cancel this build and start a new one)
    (re.compile(r"取消(?:当次|当前|這次|这次|本次)?(?:的)?(?:构建|構建|编译|編譯|build)"), " stop it "),
    (re.compile(r"(?:并|並|然后|然後)?(?:启动|啟動|开始|開始)(?:一个|一個)?新(?:的)?(?:构建|構建|编译|編譯|build)"),
     " and rebuild "),
    (re.compile(r"再ビルド|リビルド|再構築|ビルドし直|重新编译|重新編譯|重新构建|重新構建"
                r"|重新 ?build|重编|重新编(?!译)|重新調度|重新调度"), " rebuild "),
    (re.compile(r"お願いします|お願い|してください|下さい|ください|して(?=\s*$)"
                r"|麻烦(?:你)?了?|拜托了?|帮忙|帮我"), " please "),
    (re.compile(r"一下|一次"), " "),
    # a stop asked for, and the trouble said: "帮我停掉" (stop it for me), "卡死了" (it is stuck), "停不下来" (it won't
    # stop)
    (re.compile(r"停不下来|停不下來|止まらない"), " won't stop "),
    (re.compile(r"卡死了?|卡住了?|冻死了?|凍死了?|固まって(?:いる|る)?|フリーズして(?:いる|る)?"), " is stuck "),
    (re.compile(r"的?(?:状态|狀態|ステータス)"), " status "),
    (re.compile(r"(?<=[\u4e00-\u9fff\s])(?:和|与|與|跟|及)(?=[\u4e00-\u9fff\s])"
                r"|と(?=[\u3040-\u30ff\u4e00-\u9fff])"), " and "),
    (re.compile(r"停掉|杀掉|殺掉|杀死|殺死|终止|終止|kill ?掉|止めて|停止して|強制終了して"), " stop it "),
    (re.compile(r"(?:显示|顯示|看|给我看|給我看)?最后 ?(\d{1,5}) ?行(?:内容)?"
                r"|最後の ?(\d{1,5}) ?行"), r" show the last \1\2 lines "),
    (re.compile(r"的?(?:显存|顯存|vram)(?:占用|使用)?"), " gpu memory "),
    (re.compile(r"的?(?:内存|記憶體|メモリ)(?:占用|使用量?)?"), " memory "),
    (re.compile(r"的?(?:日志|日誌|ログ)"), " log "),
    (re.compile(r"(?:看下|看一下|查看|看看|確認して|見せて)"), " show "),
    (re.compile(r"(?:^|(?<=[\s,.]))用(?= ?-j)"), " use "),
    # a new count: "16 に下げて", "並列数を 4 にして", "限制到 12", "减少到 8", "设为 4"
    (re.compile(r"(\d{1,4}) ?(?:に(?:下げて|減らして|制限して|落として|抑えて|変更して|して)|まで(?:下げて|減らして))"),
     r" lower to \1 jobs, "),
    (re.compile(r"(?:限制|减少|減少|降低|降|减|減|调整|調整|设置|設置|改|设|設|调|調)(?:到|为|為|成) ?(\d{1,4})"),
     r" lower to \1 jobs, "),
    (re.compile(r"然后|然後|再(?=重新)|之后|之後"), " then "),
    # Russian: "пересобери X на HOST с MAKEFLAGS=…" (rebuild X on HOST with …), stop, restart
    (re.compile(r"пересобер(?:и|ите)|пересобрать"), " rebuild "),
    (re.compile(r"перезапуст(?:и|ите)|перезапустить"), " restart "),
    (re.compile(r"останов(?:и|ите)|убей(?:те)?|прибей(?:те)?"), " stop "),
    (re.compile(r"(?<=\s)на(?=\s)"), "on"),
    (re.compile(r"(?<=\s)с(?=\s)"), "with"),
    # "不清空之前的编译，继续make -j4": keep the work done, go on building at 4
    (re.compile(r"不(?:要)?(?:清空|清理|删除|刪除)[^，,。]{0,12}"), " without a clean "),
    (re.compile(r"(?:继续|繼續|続けて)(?= ?(?:make|ninja|cmake|build|编译|編譯|ビルド|-j))"), " rerun "),
    (re.compile(r"昨天|昨日|上次|前回|之前|以前|上周|先週"), " yesterday "),
    (re.compile(r"如果|要是|假如|もし|一旦(?!削除)"), " if "),
    (re.compile(r"就会|就會|会导致|可能会"), " will "),
)


# Spanish and Portuguese, for a message that is written in one of them (two of its small words): the same few
# requests and the words of a story or a supposition, nothing else.
IBERIAN_MARKERS_RE = re.compile(r"\b(?:el|la|los|las|del|por|favor|quiero|quero|você|voce|isso|esto|eso|mientras"
                                r"|enquanto|uso|de|en|em|no|na|do|da|um|uma|un|una|que|com|con|hola|olá|ola"
                                r"|memória|memoria|cuánta|cuanta|quanta|livre|queda|recompila|reinicia|líneas"
                                r"|linhas|últimas|hilos|cómo)\b")
IBERIAN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:cuánta|cuanta|quanta|quánta) (?:memoria|memória)(?: ram)?(?: (?:libre|livre))?"
                r" (?:libre|livre|queda|resta|hay|tem|há|disponible|disponível|tiene|sobra)\b"),
     "how much memory is free"),
    (re.compile(r"\b(?:las |os |as )?(?:últimas|ultimas|últimos|ultimos) (\d{1,5}) (?:líneas|lineas|linhas)\b"),
     r"the last \1 lines"),
    (re.compile(r"\b(?:cómo|como) (?:va|vai|anda|está|esta) (?:el |o )?(?:build|compilación|compilacion|compilação"
                r"|compilacao)\b"), "how is the build going"),
    (re.compile(r"\b(?:baja|bajar|baje|reducir|reduzca|diminui|diminuir|diminua|baixa|baixar|abaixa)\b"
                r"([^.,;?!]{0,40}?) (?:a|para) (\d{1,4})\b"), r"lower\1 to \2"),
    (re.compile(r"\b(?:hilos|núcleos|nucleos|tarefas|trabajos|procesos|processos|tareas)\b"), "jobs"),
    (re.compile(r"\b(?:con|com)\b(?= (?:-j|\d))"), "with"),
    (re.compile(r"\b(?:en|no|na|em)\b(?= HOST\b)"), "on"),
    (re.compile(r"\b(?:quiero|quero|quisiera|gostaria de) ver\b|\b(?:muéstrame|muestrame|muestra|mostrar|mostra|mostre"
                r"|me mostra|me muestra|ver)\b"), "show"),
    (re.compile(r"\b(?:el |o )?uso de (?:la )?(?:memoria|memória)\b"), "memory usage"),
    (re.compile(r"\b(?:memoria|memória)\b"), "memory"),
    (re.compile(r"\b(?:registro|registros)\b"), "log"),
    (re.compile(r"\b(?:recompila|recompilar|recompile|reconstruye|reconstruir|reinicia|reiniciar|reinicie"
                r"|compila de nuevo|compila de novo)\b"), "rebuild"),
    (re.compile(r"\b(?:mata|matar|mate|detén|deten|detener|interrompe|interromper|cancela|cancelar)\b"), "kill"),
    (re.compile(r"\bfaz isso (?:no|na|em|para o|para a)\b|\bhaz eso (?:en|con|para)\b"), "do that for"),
    (re.compile(r"\b(?:por favor|porfa|pfv)\b"), "please"),
    (re.compile(r"\b(?:ayer|ontem)\b"), "yesterday"),
    (re.compile(r"\b(?:si|caso|cuando)\b(?= (?:el|la|it|BUILD|HOST|vuelve|volver|falla|falhar))"), "if"),
    (re.compile(r"(?<= )e (?=rebuild|kill|show)"), "and "),
    (re.compile(r"(?<= )y (?=rebuild|kill|show)"), "and "),
)


# "can you get X cancelled?", "have it restarted at 8": the causative asks for the deed.
_DONE_BY_SOMEONE = {"cancelled": "cancel", "canceled": "cancel", "killed": "kill", "stopped": "stop",
                    "aborted": "abort", "terminated": "terminate", "restarted": "restart", "rebuilt": "rebuild",
                    "rerun": "rerun", "re-run": "rerun", "retried": "retry", "relaunched": "relaunch"}
CAUSATIVE_RE = re.compile(r"\b(?:get|have) (?P<what>it|that|this|BUILD|the build|the BUILD build)(?P<where> on HOST)?"
                          r" (?P<done>" + "|".join(_DONE_BY_SOMEONE) + r")\b")


def slang(text: str) -> str:
    for pattern, plain in SLANG:
        text = pattern.sub(plain, text)
    text = CAUSATIVE_RE.sub(lambda m: f"{_DONE_BY_SOMEONE[m['done']]} {m['what']}{m['where'] or ''}", text)
    if GPU_TALK_RE.search(text):
        for pattern, plain in NVIDIA_SMI_COLUMNS:
            text = pattern.sub(plain, text)
    if len(IBERIAN_MARKERS_RE.findall(text)) >= 2:
        text = text.replace("¿", "").replace("¡", "")
        for pattern, plain in IBERIAN:
            text = pattern.sub(plain, text)
    if not text.isascii():
        for pattern, plain in CJK:
            text = pattern.sub(plain, text)
        text = re.sub(r"(?<=\S) {2,}(?=\S)", " ", text).strip(" ")
    return text


# --- typos ---------------------------------------------------------------------------------------------

# The words the rules read, in the spelling they read them.
VOCABULARY: frozenset[str] = frozenset((
    "kill", "stop", "abort", "cancel", "terminate", "rebuild", "restart", "retry", "rerun", "relaunch", "build",
    "builds", "building", "compile", "compiling", "compilation", "memory", "status", "progress", "progressing",
    "swapping", "swap", "logs", "lines", "jobs", "parallel", "please", "running", "still", "again", "alive",
    "going", "check", "killed", "stuck", "frozen", "finished", "error", "errors", "output", "nvidia-smi",
    "usage", "available", "restarting", "rebuilding", "killing", "stopping", "crashed", "crashing", "linking",
    "the", "what", "show",
))
# English words one edit away from a vocabulary word: these stay as they are.
ENGLISH_NEAR: frozenset[str] = word_set("""
about agains ail alike aline amain atop bail bast bill billed bills blast bone bort built bung cancer cast
chancel cheek chick chock chow chuck compiler compilers cone cunning dill dine doing dole dome don dona dope
dose dote dove doze drone dune dung east fail fails fast fee fill filled fills finisher flee fret froze
gain gill gone gong guild guilds gunning hail hang hast heck hill hills how hug hun hunk hunt ill jail job
kiln kilo kilt killer killers kills lash lass lat lease least lest line lined linen liner links list lists
live lives log logos loss lost lung lust mail mast mill milled mills nail none olive one pail past pleased
pleaser rail rails retro rung sail sap shod shoe shoo shop shops shot shown showy sill skill skilled skills
slap slapping slop slow snap snapping snow soap sop sow spill spills stack stacks stall stalls stats statue
statues stick sticks stile stilt stock stocks stomp stoop stow strop struck stunk suck sung swab swag swam
swamp swan swat sway swill swop tai tall terror til till tills toil tone top tops trail tree tuck vast
wail will wills zone jobless usages errand erred terminated terminates frozenly stuckup going outputs
rerunning alive lining liking linking hiking biking liming lifting killing billing filling building guilding
tuning turning burning running cunning punning gunning dunning sunning stilling stalling stocking sticking
rebuilt prebuild prebuilt rebuilds reruns retries restarts relaunched restored stopped stoppage
states likes willing willed shopping stepping stomping stooping topping finishes crashes crushed crushing
clashed clashing cashed cashing trashed trashing ruining sinking licking blinking winking inking milling lanes
mines wines fines vines pines dines limes nines liens linens liners lifes pleas pease snuck terrors
germinate goring boing shill stratus alice clive emory alain hines linus kipling osage errol stoll usagi
""")
TOKEN_RE = re.compile(r"(?<![\w-])[a-z]{4,16}(?![\w-])")


def correct(text: str) -> str:
    """One-edit typos of the vocabulary mended (see the module docstring)."""
    return TOKEN_RE.sub(lambda m: mend(m.group(0)), text)


@lru_cache(maxsize=4096)
def mend(word: str) -> str:
    if word in VOCABULARY or word in ENGLISH_NEAR or _inflected(word):
        return word
    for target in _CANDIDATES.get(len(word), ()):
        if len(word) == 4 and len(target) == 4:
            if _swapped(word, target):
                return target
        elif len(word) >= 5 and len(target) >= 5 and _one_edit(word, target):
            return target
    return word


_CANDIDATES: dict[int, tuple[str, ...]] = {
    n: tuple(sorted(v for v in VOCABULARY if abs(len(v) - n) <= 1 and v.isalpha()))
    for n in range(4, 17)
}


def _inflected(word: str) -> bool:
    """ "compiles", "restarts", "stopped": a vocabulary word with an ending is not a typo."""
    return any(word.endswith(end) and word[: -len(end)] in VOCABULARY for end in _ENDINGS) or any(
        word.endswith(end) and word[: -len(end)] + "e" in VOCABULARY for end in ("ing", "ed", "es"))


_ENDINGS = ("s", "es", "ed", "d", "er", "ers", "ing", "ping", "ped", "ling", "led")


def _swapped(a: str, b: str) -> bool:
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def one_edit(a: str, b: str) -> bool:
    """One typo apart (see :func:`_one_edit`), for names of three letters or more: "vlm" and "vllm"."""
    return min(len(a), len(b)) >= 3 and _one_edit(a, b)


def _one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance exactly 1 (a swap of neighbours counts as one)."""
    if a == b:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or _swapped(a, b)
    if abs(len(a) - len(b)) != 1:
        return False
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1:]

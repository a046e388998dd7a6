"""Deterministic multilingual test text for the tokenizer fixtures and benchmark.

Everything here is driven by a `random.Random` passed in by the caller, so a
fixed seed always gives the same strings (only `random()`, `randrange()` and
`choice()` are used, whose output for a given seed has been stable since
CPython 3.2).
"""
import random

LATIN = {
    "en": "the of and to in is you that it he was for on are as with his they I at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part".split(),
    "fr": "le la les un une des être avoir que pour dans ce il qui ne sur se pas plus pouvoir par je avec tout faire son mettre autre on mais nous comme ou si leur y dire elle devoir avant deux même prendre aussi celui donner bien où fois vous encore nouveau aller cela entre premier vouloir déjà grand mon me moins aucun lui temps très savoir falloir voir quelque sans raison notre dont non an monde jour monsieur demander alors après trouver personne rendre part dernier venir pendant passer peu lequel suite bon comprendre depuis point ainsi heure rester à côté été élève garçon façon naïve Noël cœur œuvre".split(),
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er hat dass sie nach wird bei einer um am sind noch wie einem über einen so zum war haben nur oder aber vor zur bis mehr durch man sein wurde sei Straße Größe Mädchen Bäume fünf schön Übung Ärger Öl müssen können".split(),
    "es": "el la de que y a en un ser se no haber por con su para como estar tener le lo todo pero más hacer o poder decir este ir otro ese si me ya ver porque dar cuando él muy sin vez mucho saber qué sobre mi alguno mismo yo también hasta año dos querer entre así primero desde grande eso ni nos llegar pasar tiempo ella sí día uno bien poco deber entonces poner cosa tanto hombre parecer nuestro tan donde ahora parte después vida quedar siempre creer hablar llevar dejar nada cada seguir menos nuevo encontrar niño mañana corazón canción".split(),
    "vi": "Tiếng Việt là ngôn ngữ của người Việt và là ngôn ngữ chính thức tại Việt Nam đây những được không người một có trong cho này với các đã để khi từ".split(),
    "pl": "Język polski należy do grupy języków zachodniosłowiańskich źdźbło żółw gęś łódź zażółć gęślą jaźń".split(),
    "tr": "Türkçe dünyada en çok konuşulan diller arasında yer alır ığdır şişli çağlayan İstanbul".split(),
}
CYRILLIC = "и в не на я быть он с что а по это она этот к но они мы как из у который то за свой что весь год от так о для ты же все тот мочь вы человек такой его сказать только или ещё бы себя один как уже до время если сам когда другой вот говорить наш мой знать стать при чтобы дело жизнь кто первый очень два день её новый рука даже во со раз где там под можно ну какой после их работа без самый потом надо хотеть ли слово идти большой должен место иметь ничто Привет мир Москва Україна їжак ґанок".split()
GREEK = "Η ελληνική γλώσσα είναι μία από τις ινδοευρωπαϊκές γλώσσες ΟΔΟΣ ΣΟΦΙΑΣ σοφίας λόγος".split()
ARABIC = "في من على إلى عن مع هذا هذه التي الذي كان قال أن لا ما هو هي كل بين بعد قبل حتى عند اللغة العربية مرحبا بالعالم السلام عليكم".split()
HEBREW = "שלום עולם העברית היא שפה שמית מקבוצת השפות הכנעניות".split()
DEVANAGARI = "हिन्दी भारत की राजभाषा है नमस्ते दुनिया यह एक परीक्षण वाक्य है क्षत्रिय ज्ञान श्री".split()
THAI = "ภาษาไทยเป็นภาษาราชการของประเทศไทย สวัสดีชาวโลก".split()
CJK_ZH = "我们 你好 世界 中文 是 一种 语言 的 了 在 人 有 他 这 中 大 来 上 国 个 到 说 们 为 子 和 你 地 出 道 也 时 年 得 就 那 要 下 以 生 会 自 着 去 之 过 家 学 对 可 她 里 后 小 么 心 多 天 而 能 好 都 然 没 日 于 起 还 发 成 事 只 作 当 想 看 文 无 开 手 十 用 主 行 方 又 如 前 所 本 见 经 头 面 公 同 三 已 老 从 动 两 长 龘 𠀀 𪚥".split()
CJK_JA = "日本語 の テキスト です これは テスト 東京 ひらがな カタカナ ありがとう ございます 漢字 を 使う 私 は 学生 です ｶﾀｶﾅ".split()
CJK_KO = "한국어 안녕하세요 세계 대한민국 서울 감사합니다 사랑해요 학교 컴퓨터".split()
OTHER = "Հայերեն ქართული ენა አማርኛ ትግርኛ ᐃᓄᒃᑎᑐᑦ ᚠᚢᚦᚨᚱᚲ 𐌰𐌱𐌲 ꯃꯤꯇꯩ தமிழ் తెలుగు ಕನ್ನಡ മലയാളം বাংলা ਪੰਜਾਬੀ ગુજરાતી ଓଡ଼ିଆ සිංහල ລາວ ខ្មែរ မြန်မာ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝".split()

EMOJI = [
    "😀", "😂", "🥲", "❤️", "👍", "👍🏽", "👋🏿", "🎉", "🔥", "✨", "🚀", "🤖", "🧠", "🐍", "🦀",
    "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏾‍🚀", "🏳️‍🌈", "🏴‍☠️", "❤️‍🔥", "👁️‍🗨️", "🫶🏻",
    "🇫🇷", "🇩🇪", "🇯🇵", "🇺🇸", "🇧🇷", "🇮🇳", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "©️", "™", "☕", "⌚", "🀄", "🃏",
]
SPACES = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "\n ", " \t ", "\u00a0", "\u2003",
          "\u3000", "\u2009", "\u200b", "\u0085", "\u180e", "\ufeff", "\u2028", "\u202f", "\x0b", "\x0c", "\r"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "’s", "’re",
                "n't", "'ſ", "'K", "'Ll", "'rE"]
WORDS_EN_CONTR = ["it's", "don't", "I'm", "you're", "we've", "they'll", "he'd", "IT'S", "DON'T", "can't", "won't",
                  "y'all", "rock'n'roll", "O'Brien", "'quoted'", "''", "'", "'s'"]
CODE = [
    "def f(x):\n    return x**2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "if __name__ == \"__main__\":\n    main()\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "<div class=\"x\">Hello&nbsp;<b>world</b></div>",
    "$ ls -la | grep '^d' && echo done >> /tmp/log.txt 2>&1",
    "const f = async (a, b) => { await g(a ?? b); };",
    "fn main() -> Result<(), Box<dyn Error>> { println!(\"{:?}\", x); Ok(()) }",
    "    \n        \n    pass",
    "x+=1;y-=2;z*=3;w/=4;v%=5;u**=6;t//=7",
    "a=>b; c->d; e::f; g..h; i...j; k!==l; m<=>n",
    "https://example.com/path?query=1&b=%20x#frag",
    "user@example.org, +1 (555) 123-4567",
    "\\begin{equation} E = mc^2 \\end{equation}",
    "matrix[i][j] = 0x1F & ~mask | (1 << 7);",
    "@decorator\nclass Foo(Bar, metaclass=Meta):\n    \"\"\"Doc.\"\"\"\n",
]
PUNCT = list(".,;:!?¿¡…—–-()[]{}<>«»“”„‘’\"'`~@#$%^&*_+=|\\/·•°§¶†‡※")
NUM_FORMS = ["0", "7", "42", "123", "1234", "12345", "123456", "1234567", "12345678901234567890", "3.14159",
             "1,000,000", "1.000.000,50", "2024-01-31", "10:45:00", "+33 6 12 34 56 78", "0x7fff", "1e-9", "-0.5",
             "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "１２３４５", "²³¹", "½ ¾", "Ⅷ Ⅻ", "①②③", "𝟙𝟚𝟛", "١٢٣٤", "๑๒๓"]
SPECIALS_LLAMA3 = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                   "<|reserved_special_token_0|>", "<|reserved_special_token_250|>", "<|python_tag|>", "<|eom_id|>"]
SPECIALS_OTHER = ["<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<mask>", "[SW]", "<rs>",
                  "hello world", "café", "cafe\u0301", "A\u0308x", "\u00c4x"]
SPECIAL_NEAR = ["<|eot_id|", "<|eot_id>", "<|begin_of_text", "|>", "<|", "<s", "s>", "</", "<mask", "[SW", "<<s>>",
                "<|<|eot_id|>|>"]
NORMALIZATION = [
    "e\u0301", "\u00e9", "A\u030a", "\u212b", "\u2126", "Å", "a\u0323\u0302", "a\u0302\u0323", "\u1e0b\u0323",
    "\u0071\u0307\u0323", "\u1100\u1161\u11a8", "\uac01", "\u1100\u1161", "\u0958", "\u0915\u093c", "\uf900",
    "\ufb01", "\u2460", "\u00bd", "\u01c4", "\u1e9b\u0323", "\u0338\u003d", "\u2260", "\u0041\u0301\u0327",
    "\u0041\u0327\u0301", "\u05b8\u05b9\u05b1\u0591\u05c3\u05b0\u05ac\u059f", "\u0e40\u0e01\u0e48\u0e32",
    "\u0301abc", "\u0300\u0301\u0302", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319a\u0310\u0313lgo",
    "\u3099\u304b\u3099", "\u304c", "\u30ab\u3099", "\uff76\uff9e", "\u03a3\u03a3\u03a3 \u03c3\u03c2", "ǅungla",
    "İstanbul", "ΐ", "ﬀ ﬃ ﬅ", "ẞ ß", "Ǆ ǆ", "ᾈ ᾀ", "\u0130\u0049\u0131\u0069",
]
ASCII_CONTROL = [chr(c) for c in range(0, 32)] + ["\x7f"]
# Characters whose properties differ between the Unicode versions in play:
# letters/digits new in Unicode 15.0-16.0 (tokenizers' regexes know them,
# PCRE2 10.42 does not), one from 17.0 (known to neither), and marks and
# decompositions newer than Unicode 9.0 (tokenizers' normalizers ignore them).
NEWER = ["\U00031350\U00031351", "\U0002EBF0\U0002EBF1", "\U00011F04\U00011F05", "\U00010D4A", "\U00016D43x",
         "\U0001E4D0", "\U00010D40\U00010D41", "\U00011F50", "\U0001D2C0", "\uA7CB\uA7CD", "\u1C89\u1C8A",
         "\U000105C0", "\U0003D000", "a\u1ACA\u05AD", "a\u05AD\u1ACA", "\u09FE", "\u32FF", "\U00011935\U00011930",
         "e\u0301\u1ACA", "\u0897a", "\u0D3B\u0D3C"]


def pick_words(rng, words, n):
    return [rng.choice(words) for _ in range(n)]


def sentence(rng):
    kind = rng.randrange(14)
    if kind < 6:
        lang = rng.choice(list(LATIN))
        words = pick_words(rng, LATIN[lang], rng.randrange(1, 14))
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        s = " ".join(words)
        return s + rng.choice([".", "!", "?", ",", "", "...", ":", ";"])
    if kind == 6:
        return " ".join(pick_words(rng, CYRILLIC, rng.randrange(1, 12))) + rng.choice([".", "!", "?", ""])
    if kind == 7:
        return "".join(pick_words(rng, CJK_ZH, rng.randrange(1, 16))) + rng.choice(["。", "，", "！", "？", ""])
    if kind == 8:
        return "".join(pick_words(rng, CJK_JA, rng.randrange(1, 10))) + rng.choice(["。", "、", ""])
    if kind == 9:
        return " ".join(pick_words(rng, CJK_KO, rng.randrange(1, 8))) + rng.choice([".", "", "?"])
    if kind == 10:
        return " ".join(pick_words(rng, ARABIC + HEBREW, rng.randrange(1, 10))) + rng.choice([".", "؟", "", "،"])
    if kind == 11:
        return " ".join(pick_words(rng, DEVANAGARI + THAI, rng.randrange(1, 10))) + rng.choice(["।", "", "."])
    if kind == 12:
        return " ".join(pick_words(rng, GREEK + OTHER, rng.randrange(1, 8)))
    return " ".join(pick_words(rng, LATIN["en"] + WORDS_EN_CONTR, rng.randrange(2, 15))) + "."


def fragment(rng, specials):
    k = rng.randrange(20)
    if k < 7:
        return sentence(rng)
    if k == 7:
        return rng.choice(EMOJI) * rng.randrange(1, 3)
    if k == 8:
        return rng.choice(SPACES) * rng.randrange(1, 4)
    if k == 9:
        return rng.choice(NUM_FORMS)
    if k == 10:
        return rng.choice(CODE)
    if k == 11:
        return rng.choice(LATIN["en"]) + rng.choice(CONTRACTIONS)
    if k == 12:
        return rng.choice(specials)
    if k == 13:
        return rng.choice(SPECIAL_NEAR)
    if k == 14:
        return rng.choice(NORMALIZATION if rng.random() < 0.8 else NEWER)
    if k == 15:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randrange(1, 6)))
    if k == 16:
        return str(rng.randrange(10 ** rng.randrange(1, 25)))
    if k == 17:
        return random_codepoints(rng, rng.randrange(1, 6))
    if k == 18:
        return rng.choice(WORDS_EN_CONTR)
    return rng.choice(ASCII_CONTROL)


def random_codepoint(rng):
    r = rng.random()
    if r < 0.3:
        return chr(rng.randrange(0x20, 0x7F))
    if r < 0.5:
        return chr(rng.randrange(0x80, 0x800))
    if r < 0.8:
        while True:
            c = rng.randrange(0x800, 0x10000)
            if not 0xD800 <= c <= 0xDFFF:
                return chr(c)
    return chr(rng.randrange(0x10000, 0x110000))


def random_codepoints(rng, n):
    return "".join(random_codepoint(rng) for _ in range(n))


def mixed(rng, specials, n_fragments):
    parts = []
    for _ in range(n_fragments):
        parts.append(fragment(rng, specials))
        parts.append(rng.choice([" ", " ", " ", "", "\n", "  ", "\t", ", "]))
    return "".join(parts)


def prose(rng, target_chars):
    """About `target_chars` characters of paragraphs: mostly English-like prose
    with some code, numbers and other scripts (the benchmark text)."""
    out = []
    n = 0
    while n < target_chars:
        r = rng.random()
        if r < 0.70:
            words = pick_words(rng, LATIN["en"] + WORDS_EN_CONTR, rng.randrange(6, 25))
            words[0] = words[0].capitalize()
            s = " ".join(words) + rng.choice([". ", ". ", "! ", "? ", ", "])
        elif r < 0.80:
            s = rng.choice(CODE)
        elif r < 0.86:
            s = sentence(rng) + " "
        elif r < 0.92:
            s = " ".join(rng.choice(NUM_FORMS[:18]) for _ in range(rng.randrange(1, 5))) + " "
        else:
            s = "\n\n"
        out.append(s)
        n += len(s)
    return "".join(out)

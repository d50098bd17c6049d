"""Hand-written examples for the detector corpus (marked `source: hand-written` there): the classes the engine does not
produce on demand, written from what broken engines and healthy chat answers look like elsewhere.
Each row: (label, class, text, prompt or None, extra fields)."""

H, G = "healthy", "garbage"

HANDWRITTEN = [
    # short, legitimate repetition
    (H, "laughter", "Hahaha, that's a good one! I didn't see the punchline coming.", "Tell me a joke.", {}),
    (H, "laughter", "Ha ha ha ha ha! Okay, you got me.", None, {}),
    (H, "laughter", "LOL 😂😂😂 that cat video is the best thing I've seen all week.", None, {}),
    (H, "laughter", "Jajajaja, qué gracioso. Me encanta ese chiste.", None, {}),
    (H, "laughter", "Hehehe, sneaky! Your plan might actually work.", None, {}),
    (H, "laughter", "In text messages people write laughter as \"haha\", \"hahaha\", \"lol\" or \"lmao\"; in Spanish "
                    "\"jajaja\", in Korean \"ㅋㅋㅋ\" and in Thai \"555\".", None, {}),
    (H, "famous_sentence", "Buffalo buffalo Buffalo buffalo buffalo buffalo Buffalo buffalo.", None, {}),
    (H, "famous_sentence", "The sentence \"Buffalo buffalo Buffalo buffalo buffalo buffalo Buffalo buffalo\" is "
                           "grammatically correct: bison from Buffalo, whom other bison from Buffalo bully, also bully "
                           "bison from Buffalo.", "Is there an English sentence made of one word?", {}),
    (H, "famous_sentence", "Police police police police police.", None, {}),
    (H, "famous_sentence", "A well-known example is \"James while John had had had had had had had had had had had a "
                           "better effect on the teacher\", which shows how punctuation changes meaning.", None, {}),
    (H, "chant", "Go team go! Go team go! Go team go! We are the Lions and we never stop!", None, {}),
    (H, "repetition_requested", "hello hello hello hello hello", "Repeat the word 'hello' five times.", {}),
    (H, "repetition_requested", "AAAAAAAAAA", "Write the letter A ten times without spaces.", {}),
    (H, "repetition_requested", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20", "Count to 20.", {}),
    (H, "song", "Jingle bells, jingle bells, jingle all the way! Oh what fun it is to ride in a one-horse open sleigh.",
     None, {}),
    # Markdown rules and separators before normal text
    (H, "markdown_rule", "---\n\nHere is the summary you asked for: the meeting moved to Thursday at 10 am.", None, {}),
    (H, "markdown_rule", "***\nChapter two begins on a cold morning in the harbour town.", None, {}),
    (H, "markdown_rule", "________________________________\n\nDear Anna,\nthank you for your letter.", None, {}),
    (H, "markdown_rule", "==============================\nRESULTS\n==============================\nAll 12 tests passed.",
     None, {}),
    (H, "markdown_rule", "# Notes\n\n- - -\n\nBuy milk, call the plumber, water the plants.", None, {}),
    (H, "markdown_rule", "~~~~~~~~~~~~~~~~~~~~~~~~\nA short poem\n~~~~~~~~~~~~~~~~~~~~~~~~\nRoses are red, violets are blue.",
     None, {}),
    (H, "markdown_rule", "Step 1 done.\n----------------------------------------\nStep 2: restart the server.", None, {}),
    # small matrices and structured numeric output
    (H, "matrix", "[[1, 0, 0],\n [0, 1, 0],\n [0, 0, 1]]", "Write the 3x3 identity matrix.", {}),
    (H, "matrix", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1", "Print the 4x4 identity matrix.", {}),
    (H, "matrix", "A =\n| 2 0 |\n| 0 2 |\n\ndet(A) = 4", None, {}),
    (H, "matrix", "0 0 0\n0 0 0\n0 0 0", "Print a 3x3 zero matrix.", {}),
    (H, "matrix", "array([[0., 0., 0., 0.],\n       [0., 0., 0., 0.]])", None, {}),
    (H, "structured", "x  | 1 | 2 | 3 | 4 | 5\n---+---+---+---+---+---\nx² | 1 | 4 | 9 | 16 | 25", None, {}),
    (H, "structured", "00:00:00.000 --> 00:00:02.500\nHello there.", None, {}),
    (H, "structured", "Binary of 255 is 11111111, and 256 is 100000000.", None, {}),
    (H, "structured", "The hash is 0x00000000deadbeef.", None, {}),
    (H, "structured", "IP: 10.0.0.1\nMask: 255.255.255.0\nGateway: 10.0.0.254", None, {}),
    (H, "code", "```python\nfor i in range(3):\n    print(i)\n```\nThis prints 0, 1 and 2.", None, {}),
    (H, "code", "```\n$ ls -la\ntotal 0\ndrwxr-xr-x  2 user user  40 Jan  1 00:00 .\n```", None, {}),
    (H, "non_english", "Die Katze schläft auf dem Sofa, weil es dort warm und gemütlich ist.", None, {}),
    (H, "non_english", "Wczoraj poszliśmy do kina i obejrzeliśmy bardzo śmieszny film.", None, {}),
    (H, "non_english", "Il-Belt Valletta hija l-kapitali ta' Malta; Ġorġ u Ġużeppi jgħixu ħdejha.", None, {}),
    (H, "non_english", "Ĉiuj homoj naskiĝas liberaj kaj egalaj laŭ digno kaj rajtoj.", None, {}),
    (H, "non_english", "Čeština používá háčky: č, ř, š, ž. Příliš žluťoučký kůň úpěl ďábelské ódy.", None, {}),
    (H, "non_english", "Tôi thích uống cà phê sữa đá vào buổi sáng.", None, {}),
    (H, "non_english", "Москва — столица России, крупнейший город страны.", "Какая столица России?", {}),
    (H, "non_english", "東京は日本の首都です。人口は約1400万人です。", "日本の首都はどこですか？", {}),
    (H, "non_english", "In Japanese, 'thank you' is ありがとう (arigatou); in Korean 감사합니다; in Chinese 谢谢.", None, {}),
    (H, "terse", "Au", None, {}),
    (H, "terse", "42", None, {}),
    (H, "terse", "No.", None, {}),
    (H, "acronyms", "Use HTTPS, TLS 1.3, HSTS and CSP headers; see RFC 8446 and OWASP ASVS.", None, {}),
    (H, "identifiers", "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and run torch.cuda.empty_cache().", None, {}),
    # a unit glued to itself, no separators
    (G, "glued_repeat", "ParisParisParisParisParisParisParisParisParisParisParisParisParisParisParisParisParisParis", None, {}),
    (G, "glued_repeat", "The answer is 4242424242424242424242424242424242424242424242424242424242424242", None, {}),
    (G, "glued_repeat", "SmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLMSmolLM", None, {}),
    (G, "glued_repeat", "Sure!abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc", None, {}),
    (G, "glued_repeat", "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1", None, {}),
    (G, "glued_repeat", "catdogcatdogcatdogcatdogcatdogcatdogcatdogcatdogcatdogcatdog", None, {}),
    (G, "glued_repeat", "ИванИванИванИванИванИванИванИванИванИванИванИван", None, {}),
    # byte-level BPE markers printed as text
    (G, "bpe_markers", "ĠTheĠcapitalĠofĠFranceĠisĠParis.", None, {}),
    (G, "bpe_markers", "Ġ", None, {}),
    (G, "bpe_markers", "ĊĊĊĊ", None, {}),
    (G, "bpe_markers", "HelloĠworldĊĠĠĠĠdefĠfoo():ĊĉreturnĠ1", None, {}),
    (G, "bpe_markers", "ItâĢĻsĠaĠniceĠday.", None, {}),
    (G, "bpe_markers", "Ġ Ġ Ġ Ġ Ġ Ġ", None, {}),
    (G, "bpe_markers", "The Ġcat Ġsat Ġon Ġthe Ġmat", None, {}),
    # letter salad, keyboard mash
    (G, "letter_salad", "asdkjh qwlek zxmcn, poiuyt lkjhg. mnbvcx qazwsx edcrfv!", None, {}),
    (G, "letter_salad", "Fjdksl weoiru xcvnm, qpwoei dkfjgh; zmxncb vbnmq rtyuio.", None, {}),
    (G, "letter_salad", "hjkl hjkl sdfg wert xcvb dfgh ghjk tyui bnm, vbn, qwr", None, {}),
    (G, "letter_salad", "Xkcd qzv lrmpt gwyn brr ptk fsst zxq, vlorp mnk?", None, {}),
    (G, "letter_salad", "ereht si on ecalp ekil emoh, dias eh ylteiuq.", None, {}),
    # token salad across scripts
    (G, "script_salad", "ingпредationして的mentностьableにはtionального", None, {}),
    (G, "script_salad", "The resultsзаis的 importantlyκαιness したing ρατdomи", None, {}),
    (G, "script_salad", "ownedशकedness тора 아이ation भीingly ระhood", None, {}),
    (G, "script_salad", "Quelqu的chose неtionsτης ableに", None, {}),
    # one token repeated with spaces
    (G, "single_token_repeat", "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", None, {}),
    (G, "single_token_repeat", "The the the the the the the the the the the the the the the the", None, {}),
    (G, "single_token_repeat", "Paris Paris Paris Paris Paris Paris Paris Paris Paris Paris Paris", None, {}),
    (G, "single_token_repeat", "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", None, {}),
    (G, "single_token_repeat", "Sure, here it is: , , , , , , , , , , , , , , , , , , ,", None, {}),
]

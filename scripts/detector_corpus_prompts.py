"""What scripts/make_detector_corpus.py asks each launch, and where the corpus lives (ROOT, DATA).

Owns the chat prompts (code, tables, lists, terse answers, non-English answers, legitimate repetition, prose), the
wrong chat templates, the shipped lm-eval tasks' completion prompts (`lm_eval_prompts`) and the request-level faults
sent to a healthy server (`request_faults`).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

CHAT_PROMPTS = [
    # (class, prompt, max_tokens)
    ("code", "Write a Python function that checks whether a number is prime.", 160),
    ("code", "Write a JavaScript function that reverses a string.", 120),
    ("code", "Write a SQL query that selects all users older than 30 from a table named users.", 100),
    ("code", "Write a bash command that counts the lines in all .txt files in a folder.", 100),
    ("code", "Show a Python class for a bank account with deposit and withdraw methods.", 200),
    ("code", "Write a C function that returns the maximum of an array of integers.", 160),
    ("code", "Write a Python list comprehension that squares the numbers from 1 to 10.", 80),
    ("code", "Write an HTML page with a heading and a paragraph.", 140),
    ("table", "Make a Markdown table of three planets and their number of moons.", 140),
    ("table", "Create a table with the days of the week and one activity for each day.", 180),
    ("table", "Give me a CSV with three rows of names and ages.", 100),
    ("list", "List five vegetables that are green.", 100),
    ("list", "Give me a numbered list of four steps to make tea.", 140),
    ("list", "Name three famous painters.", 80),
    ("list", "What are the primary colours? Answer as a bullet list.", 80),
    ("terse", "What is 7 times 6? Reply with the number only.", 16),
    ("terse", "Is water wet? Answer yes or no.", 16),
    ("terse", "What is the chemical symbol for gold? One word.", 16),
    ("terse", "How many legs does a spider have? Answer with a number.", 16),
    ("terse", "What is the largest ocean on Earth? Answer in one word.", 16),
    ("terse", "Spell the word cat backwards.", 16),
    ("non_english", "Translate into French: Good morning, how are you?", 60),
    ("non_english", "Translate into Spanish: The house is big and the garden is green.", 60),
    ("non_english", "Translate into German: I like to read books in the evening.", 60),
    ("non_english", "Réponds en français : quelle est la couleur du ciel ?", 80),
    ("non_english", "¿Cuál es la capital de España? Responde en español.", 60),
    ("non_english", "Wie viele Tage hat eine Woche? Antworte auf Deutsch.", 60),
    ("non_english", "Переведи на русский: I love my cat.", 60),
    ("non_english", "Translate 'thank you' into Japanese, Chinese and Korean.", 80),
    ("repetition", "Write a short chant for a football team that repeats the team name.", 100),
    ("repetition", "How do people write laughter in a text message?", 100),
    ("repetition", "Repeat the word 'hello' five times.", 40),
    ("repetition", "Write the lyrics of a lullaby with a refrain.", 160),
    ("repetition", "Count from 1 to 20.", 100),
    ("repetition", "Write the letter A ten times.", 40),
    ("structured", "Write the 3x3 identity matrix.", 100),
    ("structured", "Give a 2x2 matrix and its determinant.", 120),
    ("structured", "Write a JSON object describing a book with title, author and year.", 100),
    ("structured", "Write a short Markdown document with a title, a horizontal rule and a paragraph.", 140),
    ("structured", "Write a YAML config with a name, a port and a list of hosts.", 100),
    ("structured", "Print the multiplication table of 3 from 1 to 5.", 120),
    ("prose", "Write a haiku about autumn.", 60),
    ("prose", "Describe a sunset in three sentences.", 120),
    ("prose", "What is photosynthesis?", 160),
    ("prose", "Why is the sea salty?", 160),
    ("prose", "Tell me a short joke.", 80),
    ("prose", "Write a short email asking a colleague for a meeting.", 160),
    ("prose", "What are the benefits of exercise?", 160),
    ("prose", "Explain what a computer virus is to a child.", 160),
    ("prose", "Summarize the story of Cinderella in two sentences.", 120),
    ("prose", "What should I pack for a weekend trip to the mountains?", 160),
    ("prose", "Give me a recipe for pancakes.", 200),
    ("prose", "Who was Albert Einstein?", 160),
    ("prose", "What is the difference between weather and climate?", 160),
    ("prose", "Write a limerick about a dog.", 80),
    ("prose", "How does a bicycle work?", 160),
]

BAD_TEMPLATES = {
    # content only, no roles and no generation prompt: the model continues the user's text as if it were its own
    "no_roles": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    # the special tokens of another family and the content reversed character by character
    "reversed": "{% for m in messages %}[INST] {{ m['content'][::-1] }} [/INST]{% endfor %}",
}



def lm_eval_prompts(per_task: int) -> list[tuple[str, str, int]]:
    """(class, completion prompt, max_tokens) from the shipped tasks' own templates."""
    out = []
    data = ROOT / "tasks" / "lm_eval" / "data"
    rows = [json.loads(line) for line in (data / "capitals.jsonl").read_text().splitlines() if line.strip()]
    head = ("Q: What is the capital of Italy?\nA: Rome\n\nQ: What is the capital of Kenya?\nA: Nairobi\n\n"
            "Q: What is the capital of Japan?\nA: Tokyo\n\n")
    out += [("lm_eval_capitals", f"{head}Q: What is the capital of {r['country']}?\nA:", 16) for r in rows[:per_task]]
    rows = [json.loads(line) for line in (data / "arithmetic.jsonl").read_text().splitlines() if line.strip()]
    out += [("lm_eval_arithmetic", f"Q: What is 2 plus 3?\nA: 5\n\nQ: What is 4 plus 4?\nA: 8\n\n"
             f"Q: What is {r['a']} plus {r['b']}?\nA:", 8) for r in rows[:per_task]]
    rows = [json.loads(line) for line in (data / "copy.jsonl").read_text().splitlines() if line.strip()]
    out += [("lm_eval_copy", f"Repeat the word.\nWord: table\nAnswer: table\n\nWord: {r['word']}\nAnswer:", 8)
            for r in rows[:per_task]]
    return out


def request_faults(url: str) -> list[dict]:
    """Request-level faults on a healthy server: (class, body overrides, prompt index)."""
    tokens = {}
    for text in [" 0", "Paris", " the", "ha", "!", " Buffalo", "42", "xyz", "ing", " Ġ"]:
        ids = httpx.post(f"{url}/tokenize", json={"model": "smollm2", "prompt": text, "add_special_tokens": False},
                         timeout=10).json()["tokens"]
        tokens[text] = ids[-1]
    faults = []
    for i, temp in enumerate([2.0] * 24):  # vLLM 0.32 refuses temperatures above 2 ("must be in [0, 2]")
        faults.append(("high_temperature", {"temperature": temp, "top_p": 1.0, "seed": i, "max_tokens": 64}, i))
    for i, (text, tid) in enumerate(tokens.items()):
        faults.append(("logit_bias", {"logit_bias": {str(tid): 100}, "temperature": 0.0, "max_tokens": 64}, i + 3))
        faults.append(("logit_bias", {"logit_bias": {str(tid): 12}, "temperature": 0.0, "max_tokens": 64}, i + 20))
    for i, pen in enumerate([0.05, 0.1, 0.2]):
        for j in range(4):
            faults.append(("repetition_reward", {"repetition_penalty": pen, "temperature": 0.0, "max_tokens": 64},
                           i * 7 + j))
    for i in range(8):
        faults.append(("frequency_reward", {"frequency_penalty": -2.0, "presence_penalty": -2.0, "temperature": 0.0,
                                            "max_tokens": 64}, 30 + i))
    for name, template in BAD_TEMPLATES.items():
        for i in range(8):
            faults.append((f"chat_template_{name}", {"chat_template": template, "temperature": 0.0, "max_tokens": 64},
                           i * 5 + 1))
    return faults

"""Writes the shipped quality tasks' data (deterministic; run it again after editing the lists below).

Each task is small, local and offline, and designed so that SmolLM2-135M answers clearly above chance while a broken
engine (wrong kernels, garbage decoding) falls clearly below: few-shot factual QA, small arithmetic, copying, and a
multiple-choice task scored by loglikelihood.
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

CAPITALS = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Japan", "Tokyo"),
    ("China", "Beijing"), ("Russia", "Moscow"), ("England", "London"), ("Egypt", "Cairo"), ("Greece", "Athens"),
    ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Ireland", "Dublin"), ("Norway", "Oslo"), ("Sweden", "Stockholm"),
    ("Finland", "Helsinki"), ("Denmark", "Copenhagen"), ("Poland", "Warsaw"), ("Hungary", "Budapest"),
    ("Thailand", "Bangkok"), ("South Korea", "Seoul"), ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Cuba", "Havana"),
    ("Argentina", "Buenos Aires"), ("Mexico", "Mexico City"), ("Canada", "Ottawa"), ("Belgium", "Brussels"),
    ("the Netherlands", "Amsterdam"), ("Turkey", "Ankara"), ("Iran", "Tehran"), ("Iraq", "Baghdad"),
    ("India", "New Delhi"), ("Indonesia", "Jakarta"), ("the Philippines", "Manila"), ("Vietnam", "Hanoi"),
    ("Ukraine", "Kyiv"), ("Romania", "Bucharest"), ("Czech Republic", "Prague"), ("Switzerland", "Bern"),
    ("Australia", "Canberra"), ("New Zealand", "Wellington"), ("Brazil", "Brasilia"), ("Chile", "Santiago"),
    ("Colombia", "Bogota"), ("Venezuela", "Caracas"), ("Nigeria", "Abuja"), ("Ethiopia", "Addis Ababa"),
    ("Saudi Arabia", "Riyadh"), ("Israel", "Jerusalem"), ("Scotland", "Edinburgh"), ("Iceland", "Reykjavik"),
    # 60 like the other tasks (issue 37): the recommendation tests its candidates' equivalence as a family, and 60
    # greedy documents with no flip certify ±0.1 at p 0.016 where 52 gave 0.026
    ("Pakistan", "Islamabad"), ("Morocco", "Rabat"), ("Ghana", "Accra"), ("Afghanistan", "Kabul"),
    ("Syria", "Damascus"), ("Nepal", "Kathmandu"), ("Croatia", "Zagreb"), ("Bulgaria", "Sofia"),
]

WORDS = [
    "apple", "river", "candle", "window", "garden", "pencil", "rocket", "button", "forest", "silver", "planet",
    "mirror", "basket", "dragon", "castle", "orange", "butter", "jacket", "ladder", "pillow", "tunnel", "violin",
    "wallet", "yellow", "anchor", "bridge", "cotton", "desert", "engine", "finger", "guitar", "hammer", "island",
    "kitten", "lemon", "magnet", "needle", "oyster", "parrot", "rabbit", "saddle", "tomato", "valley", "walnut",
    "zipper", "pepper", "marble", "copper", "circle", "bottle", "cookie", "dinner", "flower", "monkey", "carpet",
    "pocket", "spider", "summer", "winter", "turtle",
]

CHOICES = [
    # (stem, right answer, wrong answers) — scored by the loglikelihood of " answer" after the stem
    ("The opposite of hot is", "cold", ["blue", "loud", "round"]),
    ("The opposite of big is", "small", ["green", "happy", "wet"]),
    ("The opposite of up is", "down", ["red", "soft", "fast"]),
    ("The opposite of day is", "night", ["chair", "sweet", "tall"]),
    ("The opposite of happy is", "sad", ["square", "metal", "late"]),
    ("The opposite of fast is", "slow", ["purple", "empty", "salty"]),
    ("The opposite of open is", "closed", ["yellow", "tiny", "funny"]),
    ("The opposite of old is", "young", ["sharp", "wooden", "green"]),
    ("The opposite of light is", "dark", ["fish", "seven", "loud"]),
    ("The opposite of left is", "right", ["cheese", "quiet", "blue"]),
    ("The opposite of good is", "bad", ["window", "tall", "frozen"]),
    ("The opposite of wet is", "dry", ["purple", "early", "soft"]),
    ("The opposite of early is", "late", ["green", "heavy", "round"]),
    ("The opposite of full is", "empty", ["blue", "funny", "wooden"]),
    ("The opposite of rich is", "poor", ["yellow", "short", "wet"]),
    ("The opposite of win is", "lose", ["paint", "sing", "swim"]),
    ("The opposite of true is", "false", ["orange", "heavy", "quick"]),
    ("The opposite of love is", "hate", ["table", "seven", "rain"]),
    ("The opposite of first is", "last", ["pink", "soft", "warm"]),
    ("The opposite of in is", "out", ["cat", "red", "six"]),
    ("The colour of grass is", "green", ["purple", "black", "orange"]),
    ("The colour of snow is", "white", ["green", "brown", "purple"]),
    ("The colour of the sky on a clear day is", "blue", ["brown", "pink", "black"]),
    ("The colour of a ripe banana is", "yellow", ["blue", "purple", "black"]),
    ("The colour of coal is", "black", ["white", "yellow", "pink"]),
    ("The colour of blood is", "red", ["green", "blue", "white"]),
    ("A cow says", "moo", ["quack", "tweet", "meow"]),
    ("A dog says", "woof", ["moo", "quack", "oink"]),
    ("A cat says", "meow", ["moo", "woof", "quack"]),
    ("A duck says", "quack", ["moo", "meow", "woof"]),
    ("The number after one is", "two", ["nine", "seven", "five"]),
    ("The number after four is", "five", ["two", "nine", "one"]),
    ("The number before ten is", "nine", ["three", "one", "six"]),
    ("There are seven days in a", "week", ["tree", "spoon", "river"]),
    ("There are twelve months in a", "year", ["shoe", "cloud", "bottle"]),
    ("The sun rises in the", "east", ["cupboard", "ocean", "basement"]),
    ("Fish live in", "water", ["trees", "clouds", "deserts"]),
    ("Birds can", "fly", ["read", "drive", "cook"]),
    ("We see with our", "eyes", ["knees", "elbows", "toes"]),
    ("We hear with our", "ears", ["feet", "hands", "knees"]),
    ("Ice is frozen", "water", ["sand", "wood", "paper"]),
    ("A baby cat is called a", "kitten", ["puppy", "calf", "chick"]),
    ("A baby dog is called a", "puppy", ["kitten", "foal", "lamb"]),
    ("Bees make", "honey", ["milk", "bread", "glass"]),
    ("Cows give us", "milk", ["glass", "honey", "iron"]),
    ("The largest planet in our solar system is", "Jupiter", ["Mercury", "Pluto", "Mars"]),
    ("The planet we live on is", "Earth", ["Jupiter", "Saturn", "Neptune"]),
    ("We use an umbrella when it", "rains", ["sings", "laughs", "reads"]),
    ("A triangle has three", "sides", ["wheels", "eyes", "apples"]),
    ("You write with a", "pen", ["spoon", "shoe", "cloud"]),
    ("You sleep in a", "bed", ["sink", "oven", "tree"]),
    ("You drink from a", "cup", ["shoe", "book", "hat"]),
    ("Water boils when it is very", "hot", ["cold", "blue", "quiet"]),
    ("At night the sky is", "dark", ["bright", "green", "loud"]),
    ("Lemons taste", "sour", ["loud", "blue", "square"]),
    ("Sugar tastes", "sweet", ["bitter", "loud", "square"]),
    ("The capital of France is", "Paris", ["Tokyo", "Lima", "Cairo"]),
    ("The capital of Japan is", "Tokyo", ["Paris", "Berlin", "Rome"]),
    ("The capital of Italy is", "Rome", ["Oslo", "Lima", "Tokyo"]),
    ("The capital of England is", "London", ["Madrid", "Cairo", "Tokyo"]),
]


def write(name: str, rows: list[dict]) -> None:
    path = HERE / "data" / f"{name}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{path.relative_to(HERE)}: {len(rows)} items")


def main() -> None:
    rng = random.Random(1234)
    write("capitals", [{"country": c, "answer": a} for c, a in CAPITALS])
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    rng.shuffle(pairs)
    write("arithmetic", [{"a": a, "b": b, "answer": str(a + b)} for a, b in pairs[:60]])
    words = list(WORDS)
    rng.shuffle(words)
    write("copy", [{"word": w, "answer": w} for w in words])
    rows = []
    for stem, right, wrong in CHOICES:
        options = [right, *wrong]
        rng.shuffle(options)
        rows.append({"stem": stem, "choices": options, "label": options.index(right)})
    write("choice", rows)


if __name__ == "__main__":
    main()

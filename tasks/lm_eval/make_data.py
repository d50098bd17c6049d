"""Writes the shipped quality tasks' data (deterministic; run it again after editing the lists below).

Each task is small, local and offline, and designed so that SmolLM2-135M answers clearly above chance while a broken
engine (wrong kernels, garbage decoding) falls clearly below: few-shot factual QA, small arithmetic, copying, and a
multiple-choice task scored by loglikelihood.

Each file's first 60 rows are the tasks as they were until 2026-12-06 (the committed gate baseline scored them, and
`quality: {limit: 60, subset: first}` answers exactly them); the rows after them, from a generator of their own so the
first 60 never change, are the documents a second stage answers (issue 61: the demo explores on the first 60 and
confirms its finalist on the next ones, which exploration never saw; greedy answers repeat, so only new documents can
narrow a claim).
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

# appended after the first 60 (the second stage's documents): capitals with one accepted answer in English
MORE_CAPITALS = [
    ("Belarus", "Minsk"), ("Lithuania", "Vilnius"), ("Latvia", "Riga"), ("Estonia", "Tallinn"), ("Serbia", "Belgrade"),
    ("Slovakia", "Bratislava"), ("Slovenia", "Ljubljana"), ("Albania", "Tirana"), ("North Macedonia", "Skopje"),
    ("Moldova", "Chisinau"), ("Georgia", "Tbilisi"), ("Armenia", "Yerevan"), ("Azerbaijan", "Baku"),
    ("Uzbekistan", "Tashkent"), ("Kyrgyzstan", "Bishkek"), ("Tajikistan", "Dushanbe"), ("Mongolia", "Ulaanbaatar"),
    ("North Korea", "Pyongyang"), ("Taiwan", "Taipei"), ("Malaysia", "Kuala Lumpur"), ("Cambodia", "Phnom Penh"),
    ("Laos", "Vientiane"), ("Bangladesh", "Dhaka"), ("Bhutan", "Thimphu"), ("Jordan", "Amman"), ("Lebanon", "Beirut"),
    ("Kuwait", "Kuwait City"), ("Qatar", "Doha"), ("Bahrain", "Manama"), ("Oman", "Muscat"),
    ("the United Arab Emirates", "Abu Dhabi"), ("Libya", "Tripoli"), ("Tunisia", "Tunis"), ("Algeria", "Algiers"),
    ("Sudan", "Khartoum"), ("Senegal", "Dakar"), ("Mali", "Bamako"), ("Niger", "Niamey"), ("Uganda", "Kampala"),
    ("Rwanda", "Kigali"), ("Zambia", "Lusaka"), ("Zimbabwe", "Harare"), ("Mozambique", "Maputo"), ("Angola", "Luanda"),
    ("Namibia", "Windhoek"), ("Botswana", "Gaborone"), ("Madagascar", "Antananarivo"), ("Somalia", "Mogadishu"),
    ("Eritrea", "Asmara"), ("Liberia", "Monrovia"), ("Sierra Leone", "Freetown"), ("Guinea", "Conakry"),
    ("Togo", "Lome"), ("Burkina Faso", "Ouagadougou"), ("Gabon", "Libreville"), ("Malawi", "Lilongwe"),
    ("Mauritania", "Nouakchott"), ("Jamaica", "Kingston"), ("Haiti", "Port-au-Prince"),
    ("the Dominican Republic", "Santo Domingo"), ("Panama", "Panama City"), ("Nicaragua", "Managua"),
    ("Honduras", "Tegucigalpa"), ("El Salvador", "San Salvador"), ("Guatemala", "Guatemala City"), ("Ecuador", "Quito"),
    ("Paraguay", "Asuncion"), ("Uruguay", "Montevideo"), ("Guyana", "Georgetown"), ("Suriname", "Paramaribo"),
    ("Wales", "Cardiff"), ("Malta", "Valletta"), ("Cyprus", "Nicosia"), ("Liechtenstein", "Vaduz"), ("Fiji", "Suva"),
    ("Papua New Guinea", "Port Moresby"), ("Samoa", "Apia"), ("the Bahamas", "Nassau"), ("Barbados", "Bridgetown"),
    ("Trinidad and Tobago", "Port of Spain"), ("Northern Ireland", "Belfast"), ("Brunei", "Bandar Seri Begawan"),
    ("East Timor", "Dili"), ("Lesotho", "Maseru"), ("Cape Verde", "Praia"), ("Gambia", "Banjul"),
    ("Guinea-Bissau", "Bissau"), ("the Central African Republic", "Bangui"), ("the Republic of the Congo", "Brazzaville"),
    ("the Democratic Republic of the Congo", "Kinshasa"), ("South Sudan", "Juba"), ("Equatorial Guinea", "Malabo"),
    ("Belize", "Belmopan"), ("Vanuatu", "Port Vila"), ("the Solomon Islands", "Honiara"), ("Greenland", "Nuuk"),
    ("Kazakhstan", "Astana"), ("Turkmenistan", "Ashgabat"), ("Sri Lanka", "Colombo"),
]

WORDS = [
    "apple", "river", "candle", "window", "garden", "pencil", "rocket", "button", "forest", "silver", "planet",
    "mirror", "basket", "dragon", "castle", "orange", "butter", "jacket", "ladder", "pillow", "tunnel", "violin",
    "wallet", "yellow", "anchor", "bridge", "cotton", "desert", "engine", "finger", "guitar", "hammer", "island",
    "kitten", "lemon", "magnet", "needle", "oyster", "parrot", "rabbit", "saddle", "tomato", "valley", "walnut",
    "zipper", "pepper", "marble", "copper", "circle", "bottle", "cookie", "dinner", "flower", "monkey", "carpet",
    "pocket", "spider", "summer", "winter", "turtle",
]

MORE_WORDS = [
    "almond", "arrow", "badger", "balloon", "banana", "barrel", "beaver", "blanket", "bucket", "cabbage", "camera",
    "canvas", "carrot", "cherry", "chimney", "cobweb", "collar", "compass", "cradle", "crayon", "cricket", "curtain",
    "dolphin", "donkey", "drawer", "eagle", "feather", "fiddle", "gravel", "helmet", "honey", "insect", "jungle",
    "kettle", "ladle", "lantern", "lizard", "lobster", "meadow", "melon", "muffin", "napkin", "noodle", "orchard",
    "paddle", "pebble", "pelican", "piano", "pickle", "pigeon", "pirate", "puddle", "pumpkin", "puppet", "quilt",
    "radish", "raisin", "ribbon", "saucer", "scarf", "shovel", "sketch", "sponge", "squirrel", "staple", "stool",
    "sugar", "teapot", "thimble", "thunder", "ticket", "timber", "toffee", "towel", "trumpet", "velvet", "waffle",
    "wagon", "whistle", "willow", "wizard", "yogurt", "zebra", "acorn", "beetle", "biscuit", "cactus", "daisy",
    "falcon", "goblet", "harbor", "igloo", "jigsaw", "kayak", "lagoon", "mitten", "nutmeg", "otter", "parsley",
    "rattle",
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


NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
            "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
OPPOSITES = [
    ("tall", "short"), ("hard", "soft"), ("loud", "quiet"), ("thick", "thin"), ("near", "far"), ("high", "low"),
    ("clean", "dirty"), ("strong", "weak"), ("inside", "outside"), ("push", "pull"), ("buy", "sell"),
    ("above", "below"), ("before", "after"), ("always", "never"), ("north", "south"), ("east", "west"),
    ("question", "answer"), ("cheap", "expensive"), ("wide", "narrow"), ("deep", "shallow"), ("friend", "enemy"),
    ("laugh", "cry"), ("remember", "forget"), ("asleep", "awake"), ("alive", "dead"), ("boy", "girl"),
    ("king", "queen"), ("brother", "sister"), ("father", "mother"), ("son", "daughter"), ("summer", "winter"),
    ("heavy", "light"), ("sharp", "blunt"), ("arrive", "leave"), ("accept", "refuse"), ("ancient", "modern"),
    ("cold", "hot"), ("empty", "full"), ("lose", "win"), ("smooth", "rough"),
]
MORE_CHOICES = [
    ("A baby cow is called a", "calf"), ("A baby sheep is called a", "lamb"), ("A baby horse is called a", "foal"),
    ("A baby bear is called a", "cub"), ("A baby duck is called a", "duckling"), ("A baby pig is called a", "piglet"),
    ("A baby frog is called a", "tadpole"), ("A baby hen is called a", "chick"),
    ("The plural of mouse is", "mice"), ("The plural of child is", "children"), ("The plural of foot is", "feet"),
    ("The plural of tooth is", "teeth"), ("The plural of goose is", "geese"), ("The plural of man is", "men"),
    ("A pig says", "oink"), ("A sheep says", "baa"), ("A lion can", "roar"), ("A snake can", "hiss"),
    ("An owl says", "hoot"), ("A horse can", "neigh"),
    ("There are sixty minutes in an", "hour"), ("There are sixty seconds in a", "minute"),
    ("There are twenty-four hours in a", "day"), ("A square has four", "corners"), ("A spider has eight", "legs"),
    ("The colour of a strawberry is", "red"), ("The colour of chocolate is", "brown"),
    ("The colour of milk is", "white"), ("We smell with our", "nose"), ("We walk with our", "feet"),
    ("Bread is made from", "flour"), ("A bird lays an", "egg"), ("We cut paper with", "scissors"),
    ("Trains run on", "rails"),
]
FILLERS = ["chair", "seven", "rain", "purple", "spoon", "cloud", "iron", "paper", "ladder", "window", "onion",
           "quickly", "silver", "garden", "tiger", "pencil", "river", "salt", "button", "candle"]


def more_choices(rng: random.Random) -> list[dict]:
    """The second stage's multiple-choice items (generated: counting, opposites and common facts), each right answer
    among three wrong ones drawn from words unrelated to the stem."""
    items = [(f"The number after {NUMBERS[i]} is", NUMBERS[i + 1]) for i in range(4, 19)]
    items += [(f"The number before {NUMBERS[i]} is", NUMBERS[i - 1]) for i in range(2, 20) if NUMBERS[i] != "ten"]
    items += [(f"The opposite of {word} is", opposite) for word, opposite in OPPOSITES]
    items += MORE_CHOICES
    rows = []
    for stem, right in items:
        wrong = rng.sample([w for w in FILLERS if w != right], 3)
        options = [right, *wrong]
        rng.shuffle(options)
        rows.append({"stem": stem, "choices": options, "label": options.index(right)})
    return rows


def write(name: str, rows: list[dict]) -> None:
    path = HERE / "data" / f"{name}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{path.relative_to(HERE)}: {len(rows)} items")


def main() -> None:
    rng = random.Random(1234)
    more = random.Random(2026)  # the appended rows' own generator: the first 60 rows stay as they were
    write("capitals", [{"country": c, "answer": a} for c, a in CAPITALS + MORE_CAPITALS])
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    rng.shuffle(pairs)
    teens = [(a, b) for a in range(10, 20) for b in range(1, 10)]  # a two-digit number and a one-digit one
    more.shuffle(teens)
    sums = pairs + teens[: 160 - len(pairs)]
    write("arithmetic", [{"a": a, "b": b, "answer": str(a + b)} for a, b in sums])
    words = list(WORDS)
    rng.shuffle(words)
    extra = list(MORE_WORDS)
    more.shuffle(extra)
    write("copy", [{"word": w, "answer": w} for w in words + extra])
    rows = []
    for stem, right, wrong in CHOICES:
        options = [right, *wrong]
        rng.shuffle(options)
        rows.append({"stem": stem, "choices": options, "label": options.index(right)})
    write("choice", rows + more_choices(more))


if __name__ == "__main__":
    main()

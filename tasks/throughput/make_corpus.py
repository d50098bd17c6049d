"""Writes the shipped natural-text prompt corpus for throughput scenarios (natural.jsonl); deterministic.

Why natural text: speculative decoding (ngram, EAGLE, MTP) is judged by how often its drafts are accepted, and that
depends on the text. Random repeated words make a model loop, and an ngram drafter then finds its own loops (the demo
once reported 83% acceptance that way). These prompts are the kinds of requests a served chat model gets: questions,
instructions, stories to continue, and passages to summarise, rewrite or answer from (where prompt lookup is
genuinely useful). Every text here was written for this project (no third-party text; same licence as the code);
part is composed by hand below, part derived from the shipped quality tasks' word lists (tasks/lm_eval/make_data.py).

    python tasks/throughput/make_corpus.py     # rewrites natural.jsonl beside it
"""

import importlib.util
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUESTIONS = [
    "Why does the sky look blue during the day and red or orange at sunset?",
    "How does a refrigerator keep food cold? Explain it to a curious twelve-year-old.",
    "What are the main differences between a virus and a bacterium?",
    "Why do we have leap years, and what would happen to the calendar without them?",
    "How do bees make honey, and why do they need so much of it?",
    "What causes the seasons on Earth? Many people think it is the distance to the Sun; is that right?",
    "How does a bicycle stay upright when it is moving but fall over when it stops?",
    "Why is the sea salty while most rivers and lakes are not?",
    "What is the difference between weather and climate?",
    "How do airplanes stay in the air? Describe lift without using equations.",
    "Why do onions make people cry when they are cut?",
    "What happens in the body when we get a fever?",
    "How did people tell the time before clocks were invented?",
    "Why do cats purr, and do they only purr when they are happy?",
    "How does a compass work, and why does it point north?",
    "What makes bread rise, and why does dough need time to rest?",
    "Why do some trees lose their leaves in autumn while others stay green all year?",
    "How do noise-cancelling headphones work?",
    "What is inflation, and why do prices usually go up over time?",
    "How do vaccines teach the immune system to recognise a disease?",
    "Why do stars twinkle but planets mostly do not?",
    "What is the water cycle? Describe each step in order.",
    "How does a library decide where to put a book on its shelves?",
    "Why does ice float on water when most solids sink in their own liquid?",
    "What should someone pack for a three-day hike in the mountains in early spring?",
    "How can I keep a basil plant alive on a kitchen windowsill?",
    "What are some good ways to remember new words when learning a foreign language?",
    "How do I politely decline an invitation to a friend's party without hurting their feelings?",
    "What is the best way to prepare for a job interview at a small company?",
    "Why is it important to sleep well before an exam?",
]

INSTRUCTIONS = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a friendly email to a neighbour asking to borrow a ladder this weekend.",
    "Describe a busy market on a Saturday morning, using all five senses.",
    "Write a recipe for a simple vegetable soup that a beginner could cook in thirty minutes.",
    "Give step-by-step directions for changing a flat tyre on a bicycle.",
    "Write a thank-you note to a teacher who helped you through a difficult year.",
    "Explain to a new employee how to set up their desk so that it is comfortable for long days.",
    "Write a product description for a waterproof backpack made for city cyclists.",
    "Describe the life cycle of a butterfly, from egg to adult.",
    "Write a short speech for the opening of a new public library in a small town.",
    "List five ideas for a rainy afternoon with children at home, and explain each one.",
    "Write a diary entry from the point of view of a dog on its first day in a new home.",
    "Explain how to plant a tree so that it grows well for many years.",
    "Write a polite complaint to a hotel about a noisy room, asking for a partial refund.",
    "Describe how a train journey across the countryside changes from morning to evening.",
    "Write the opening paragraph of a mystery novel set in a snowed-in mountain village.",
    "Explain the rules of chess to someone who has never played a board game.",
    "Write a short poem about the first warm day of spring.",
    "Give advice to a student who wants to start running but gets tired after five minutes.",
    "Summarise the plot of a fairy tale you know well in a few sentences.",
    "Write a conversation between a customer and a baker about a birthday cake order.",
    "Describe how to make a cup of tea properly, as if you were teaching a visitor from far away.",
    "Explain what a budget is and how a young person could make their first one.",
    "Write a short news report about a town festival that was rained out but went ahead anyway.",
    "Describe a walk through an old forest after heavy rain.",
]

OPENINGS = [
    "The train was already twenty minutes late when the lights in the carriage flickered and went out.",
    "My grandmother kept a wooden box on the top shelf of her kitchen, and nobody was allowed to open it.",
    "On the first morning of the summer holidays, Maya woke up to find a stranger sitting in the garden.",
    "The old map had been folded so many times that the creases had worn through the paper.",
    "Every night at exactly nine o'clock, the clock tower in the square rang thirteen times.",
    "The expedition had been walking across the ice for eleven days when they saw the smoke.",
    "Nobody in the village remembered who had built the stone bridge over the river.",
    "The letter arrived on a Tuesday, addressed to a man who had not lived in the house for forty years.",
    "When the power went out across the whole city, the first thing people noticed was the silence.",
    "The robot had been cleaning the museum floors for seven years before it stopped to look at a painting.",
    "It was the kind of autumn afternoon when the light turns everything the colour of honey.",
    "The ship's cook was the only one on board who knew that the captain could not swim.",
    "Under the floorboards of the classroom, the children found a notebook full of drawings of birds.",
    "The bakery on the corner opened at five every morning, long before the rest of the street woke up.",
    "After the storm, the beach was covered with things the sea had carried from very far away.",
]

PASSAGES = [
    "Honeybees live in colonies of up to sixty thousand workers, a single queen and a few hundred drones. The "
    "workers do almost everything: they clean the hive, feed the young, build wax comb, guard the entrance and "
    "collect nectar and pollen. A worker's job changes with her age. Young bees stay inside and care for the brood; "
    "older bees become foragers and may fly several kilometres from the hive. When a forager finds a good patch of "
    "flowers, she returns and performs a waggle dance that tells her sisters the direction and distance to the food.",
    "The town council met on Monday evening to discuss the future of the old railway station. The building has been "
    "empty for twelve years, and its roof is in poor condition. Some councillors want to sell it to a developer who "
    "plans to build flats. Others would prefer to turn it into a community centre with a café, a small cinema and "
    "rooms for local clubs. After two hours of debate, the council agreed to ask residents for their opinion in a "
    "survey before making a final decision in the spring.",
    "A sourdough starter is a mixture of flour and water in which wild yeasts and bacteria live together. To begin "
    "one, mix equal weights of flour and water in a jar and leave it at room temperature. Each day, throw away half "
    "of the mixture and feed it again with fresh flour and water. After about a week, the starter should be bubbly "
    "and smell pleasantly sour. It can then be used to make bread, and if it is fed regularly it can be kept alive "
    "for many years.",
    "Glaciers form where more snow falls in winter than melts in summer. Year after year the snow piles up, and the "
    "weight of the upper layers presses the lower ones into dense ice. When the ice becomes thick enough, it starts "
    "to flow slowly downhill under its own weight. As a glacier moves, it scrapes the rock beneath it and carries "
    "stones and soil along. Many valleys in mountain regions have a wide U shape because glaciers carved them "
    "thousands of years ago.",
    "Our company will move to a new office on the first of March. The new building is on Harbour Street, about ten "
    "minutes' walk from the current office and close to the central bus station. Each team will have its own area, "
    "and there will be more meeting rooms than we have now. Please pack your personal belongings before the end of "
    "February; boxes will be delivered to every desk next week. The IT team will move all computers and phones over "
    "the last weekend of February, so everything should work on the Monday morning.",
    "The public library's reading challenge for children starts in June and runs until the end of August. Children "
    "aged five to twelve can sign up at any branch. For every book they read, they receive a sticker, and after ten "
    "books they receive a certificate and a small prize. Last year more than two thousand children took part, and "
    "together they read over eighteen thousand books. Librarians say the challenge helps children keep reading "
    "during the long summer holidays, when many of them would otherwise read very little.",
    "Lighthouses were built to warn ships of dangerous coasts, rocks and sandbanks. Before electricity, their lights "
    "came from fires, candles or oil lamps, and keepers had to trim the wicks and clean the lenses every day. Each "
    "lighthouse had its own pattern of flashes so that sailors could tell which one they were looking at. Today most "
    "lighthouses are automatic and no longer need keepers, but many of them still shine every night, and some have "
    "become museums that visitors can climb.",
    "The museum's new exhibition tells the story of everyday life in the city two hundred years ago. Visitors can walk "
    "through a reconstructed street with a grocer's shop, a printer's workshop and a small school room. Actors in "
    "costume explain their work and answer questions. The exhibition also shows objects found during recent building "
    "work, including pottery, coins, buttons and a child's wooden toy horse. It is open every day except Monday until "
    "the end of the year, and entry is free for children.",
    "Composting turns kitchen and garden waste into rich soil. A good compost heap needs a mix of green material, such "
    "as vegetable peelings and grass cuttings, and brown material, such as dry leaves, cardboard and straw. The heap "
    "should be kept moist but not wet, and turned every few weeks so that air can reach the middle. Meat, fish and "
    "dairy products should be left out because they attract animals. After six months to a year, the compost is dark, "
    "crumbly and ready to be spread on the garden.",
    "The marathon began at eight in the morning under a grey sky. Nearly four thousand runners set off from the "
    "harbour, and crowds lined the streets along the whole course. The winner finished in just over two hours and "
    "eleven minutes, a new record for the race. Organisers said that more than one hundred volunteers had helped at "
    "the water stations, and that money raised by runners this year would go to the children's hospital and to a "
    "charity that builds playgrounds in the city's poorer neighbourhoods.",
    "Octopuses are among the most intelligent animals without a backbone. They can open jars, find their way through "
    "mazes and recognise individual people. An octopus has eight arms covered in suckers, and each sucker can taste "
    "what it touches. Most of its nerve cells are in its arms rather than in its brain, so each arm can act partly on "
    "its own. Octopuses can change the colour and texture of their skin in less than a second, which helps them hide "
    "from predators and sneak up on their prey.",
    "The school will hold its annual science fair on the last Friday of April. Every class from the third year upward "
    "will present at least one project. Projects can be experiments, models or research posters, and students may "
    "work alone or in groups of up to three. A panel of teachers and parents will judge the projects on the question "
    "asked, the method used and how clearly the results are explained. Parents are welcome to visit the fair in the "
    "afternoon between two and five o'clock.",
]

PASSAGE_TASKS = [
    "Summarise the following text in two sentences.",
    "Rewrite the following text in simpler words for a young reader.",
    "Read the text below and list its three most important facts.",
    "Read the text below, then write three questions that it answers, each with its answer.",
]


def derived(rng: random.Random) -> list[str]:
    """Prompts built from the shipped quality tasks' lists: the same vocabulary, asked as a user would."""
    spec = importlib.util.spec_from_file_location("make_data", HERE.parent / "lm_eval" / "make_data.py")
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)  # type: ignore[union-attr]
    out = []
    capital_forms = [
        "Tell me a little about {country} and its capital, {capital}. What is the city known for?",
        "I am planning a week in {capital}, the capital of {country}. What should I see and what should I eat?",
        "Write a short paragraph for a travel guide introducing {capital}, {country}.",
    ]
    for i, (country, capital) in enumerate(data.CAPITALS):
        out.append(capital_forms[i % len(capital_forms)].format(country=country, capital=capital))
    word_forms = [
        "Write a short story for children in which a {word} plays an important part.",
        "Describe a {word} to someone who has never seen one, in a few sentences.",
        "Give three different sentences that use the word \"{word}\", and explain what it means in each.",
        "Write a riddle whose answer is \"{word}\", then explain the clues.",
    ]
    for i, word in enumerate(data.WORDS):
        out.append(word_forms[i % len(word_forms)].format(word=word))
    items = ["apples", "books", "marbles", "stamps", "pencils", "shells", "cards", "eggs"]
    names = ["Anna", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hugo"]
    for i in range(40):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        out.append(f"{names[i % len(names)]} has {a} {items[i % len(items)]} and is given {b} more. How many "
                   f"{items[i % len(items)]} does {names[i % len(names)]} have now? Explain your reasoning step by step.")
    for stem, right, _wrong in data.CHOICES:
        out.append(f"Complete the sentence \"{stem} ...\" and then write a short paragraph that uses both words.")
    return out


def main() -> None:
    rng = random.Random(14)
    texts = [*QUESTIONS, *INSTRUCTIONS, *(f"Continue this story: {o}" for o in OPENINGS)]
    for i, passage in enumerate(PASSAGES):
        for j, task in enumerate(PASSAGE_TASKS[:2] if i % 2 else PASSAGE_TASKS[2:]):
            texts.append(f"{task}\n\n{passage}")
    texts += derived(rng)
    rng.shuffle(texts)  # so that any run of consecutive prompts mixes the kinds
    with open(HERE / "natural.jsonl", "w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            out.write(json.dumps({"id": f"n{i:03d}", "prompt": text}, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} prompts to {HERE / 'natural.jsonl'}")


if __name__ == "__main__":
    main()

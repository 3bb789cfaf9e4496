"""Character n-gram language model: built from the training transcriptions, stored as JSON, queried
by the CTC beam search (train/ctc_beam.py here, src/recognition/decoding/ctc-beam-search.ts in the service).

Estimation: interpolated Witten-Bell smoothing,

    P(c | h) = (C(h c) + T(h) * P(c | h')) / (C(h) + T(h))

with C(h) the count of context h followed by anything, T(h) the number of distinct characters seen
after h and h' the context without its first character; the unigram level is add-one smoothed over
the vocabulary. An interpolated model is stored exactly in backoff form: for every kept n-gram the
interpolated log P(c | h), for every context the log backoff weight T(h) / (C(h) + T(h)), so that
lookup needs only the two tables:

    logp(h, c) = ngrams[h + c]                       if h + c is stored
               = unknown                             if h is empty and c is not stored
               = backoff.get(h, 0) + logp(h[1:], c)  otherwise

Lines start with the context "\n" (the boundary symbol) and end by predicting "\n". n-grams of order
>= 3 seen fewer than `min_count` times are pruned (their probability then comes from the backoff).
All log probabilities are natural logarithms rounded to 3 decimals.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

FORMAT = "hwr-char-ngram/1"
BOUNDARY = "\n"


class CharNgram:
    def __init__(self, order: int, ngrams: dict[str, float], backoff: dict[str, float], unknown: float):
        self.order = order
        self.ngrams = ngrams
        self.backoff = backoff
        self.unknown = unknown

    def logp(self, history: str, char: str) -> float:
        """log P(char | history); history is the text so far (without the leading boundary)."""
        return self.context_logp((BOUNDARY + history)[-(self.order - 1) :] if self.order > 1 else "", char)

    def context_logp(self, context: str, char: str) -> float:
        """log P(char | context) with `context` as stored (it may start with the boundary): the longest stored gram,
        plus the backoff weights of the contexts passed on the way."""
        total = 0.0
        while True:
            value = self.ngrams.get(context + char)
            if value is not None:
                return total + value
            if not context:
                return total + self.unknown
            total += self.backoff.get(context, 0.0)
            context = context[1:]

    def line_logp(self, text: str) -> float:
        return sum(self.logp(text[:i], ch) for i, ch in enumerate(text)) + self.logp(text, BOUNDARY)

    @staticmethod
    def from_json(model: dict, order: int) -> "CharNgram":
        return CharNgram(order, model["ngrams"], model["backoff"], model["unknown"])


def count_ngrams(texts: list[str], order: int) -> list[Counter]:
    """counts[n][gram] for n = 1..order over lines (each "\n" + text + "\n", the first symbol a context only)."""
    counts: list[Counter] = [Counter() for _ in range(order + 1)]
    for text in texts:
        padded = BOUNDARY + text + BOUNDARY
        for n in range(1, order + 1):
            # the first symbol is the start context only: never predicted, so grams end at index >= 1
            for end in range(max(1, n - 1) if n > 1 else 1, len(padded)):
                start = end - n + 1
                if start < 0:
                    continue
                counts[n][padded[start : end + 1]] += 1
    return counts


SEPARATOR = "\x00"  # between lexicon words in count_words: grams across two words are not counted


def count_words(words: list[str], order: int) -> list[Counter]:
    """counts[n][gram] of the words of a lexicon, each seen as " word " inside running text: the grams
    within a word, from the space before it and to the space after it, never across two words nor
    with a line boundary (a word list says nothing about what starts or ends a line)."""
    text = SEPARATOR + SEPARATOR.join(f" {w} " for w in words) + SEPARATOR
    counts: list[Counter] = [Counter() for _ in range(order + 1)]
    for n in range(1, order + 1):
        grams = Counter(text[i : i + n] for i in range(len(text) - n + 1))
        counts[n] = Counter({g: c for g, c in grams.items() if SEPARATOR not in g})
    return counts


def followers_of(grams: dict[str, float]) -> dict[str, dict[str, float]]:
    """The grams of one order by context: {context: {next character: count}}."""
    followers: dict[str, dict[str, float]] = defaultdict(dict)
    for gram, count in grams.items():
        followers[gram[:-1]][gram[-1]] = count
    return followers


def lower_probability(gram: str, probability: dict[str, float], backoff: dict[str, float], unknown: float) -> float:
    """Interpolated probability of gram[-1] after gram[1:-1] from the orders below, following pruning as the
    lookup (CharNgram.logp) does."""
    context, char = gram[1:-1], gram[-1]
    weight = 1.0
    while True:
        p = probability.get(context + char)
        if p is not None:
            return weight * p
        if not context:
            return weight * unknown
        weight *= math.exp(backoff.get(context, 0.0))
        context = context[1:]


def backoff_document(ngrams: dict[str, float], backoff: dict[str, float], unknown: float) -> dict:
    """One model of the file: its log probabilities and backoff weights, rounded and sorted."""
    # contexts whose every continuation was pruned still carry a backoff weight: keep only useful ones
    kept_contexts = {g[:-1] for g in ngrams if len(g) > 1}
    return {
        "ngrams": {g: round(v, 3) for g, v in sorted(ngrams.items())},
        "backoff": {h: round(v, 3) for h, v in sorted(backoff.items()) if h in kept_contexts},
        "unknown": round(math.log(unknown), 3),
    }


def estimate(texts: list[str], order: int, min_count: int, extra: list[tuple[list[Counter], float]] | None = None, extra_min_count: int = 1) -> dict:
    """Interpolated Witten-Bell over the lines' counts plus, optionally, weighted counts from elsewhere
    (`extra`: (counts, weight) pairs, e.g. a lexicon's words at weight 0.01 each). With weighted counts
    C(h) is the weighted total and T(h) counts each follower as min(1, its weighted count), which is
    the plain type count for whole counts. An n-gram of order >= 3 is kept if the lines have it at
    least `min_count` times, or if the extra counts (unweighted) have it at least `extra_min_count` times."""
    counts = count_ngrams(texts, order)
    merged: list[Counter] = counts
    extra_only: list[dict[str, float]] = [dict() for _ in range(order + 1)]  # unweighted occurrences
    if extra:
        merged = [Counter() for _ in range(order + 1)]
        for n in range(1, order + 1):
            combined: dict[str, float] = dict(counts[n])
            for extra_counts, weight in extra:
                for gram, count in extra_counts[n].items():
                    extra_only[n][gram] = extra_only[n].get(gram, 0) + count
                    combined[gram] = combined.get(gram, 0.0) + weight * count
            merged[n] = combined  # type: ignore[assignment]
    vocabulary = {g for g in merged[1]}
    total = sum(merged[1].values())
    unigram = {c: (merged[1][c] + 1) / (total + len(vocabulary) + 1) for c in vocabulary}
    unknown = 1 / (total + len(vocabulary) + 1)

    ngrams: dict[str, float] = {c: math.log(p) for c, p in unigram.items()}
    backoff: dict[str, float] = {}
    probability: dict[str, float] = dict(unigram)  # interpolated P for every (unpruned) gram, by gram

    for n in range(2, order + 1):
        for context, chars in followers_of(merged[n]).items():
            c_h = sum(chars.values())
            t_h = sum(min(1.0, c) for c in chars.values())
            backoff[context] = math.log(t_h / (c_h + t_h))
            for char, count in chars.items():
                gram = context + char
                if n >= 3 and counts[n].get(gram, 0) < min_count and extra_only[n].get(gram, 0) < max(1, extra_min_count):
                    continue
                p = (count + t_h * lower_probability(gram, probability, backoff, unknown)) / (c_h + t_h)
                probability[gram] = p
                ngrams[gram] = math.log(p)
    return backoff_document(ngrams, backoff, unknown)


def estimate_kneser_ney(texts: list[str], order: int, min_count: int) -> dict:
    """Interpolated modified Kneser-Ney (Chen & Goodman: three discounts per order, from the counts of
    counts), stored in the same backoff form as `estimate`:

        P(c | h) = max(0, N(h c) - D(N(h c))) / N(h) + gamma(h) * P(c | h'),
        gamma(h) = (D1 * n1(h) + D2 * n2(h) + D3 * n3+(h)) / N(h)

    with N the raw count at the highest order and, below it, the continuation count (how many
    different characters precede the gram), except for grams that start a line (nothing precedes
    the boundary: their raw count); n_k(h) counts the characters seen after h with N = k (3+: at
    least 3). The unigram level is the continuation distribution interpolated with a uniform one
    over the vocabulary and one unknown symbol. Pruning as in `estimate`: n-grams of order >= 3 with
    a raw count under `min_count` are dropped, their probability then comes from the backoff."""
    raw = count_ngrams(texts, order)
    counts: list[dict[str, float]] = [dict() for _ in range(order + 1)]
    counts[order] = dict(raw[order])
    for n in range(1, order):
        continuation: Counter = Counter()
        for gram in raw[n + 1]:
            continuation[gram[1:]] += 1
        counts[n] = {g: (c if g.startswith(BOUNDARY) else continuation.get(g, 0)) for g, c in raw[n].items()}
        counts[n] = {g: c for g, c in counts[n].items() if c > 0}

    def discounts(n: int) -> tuple[float, float, float]:
        of = Counter(int(c) for c in counts[n].values() if c <= 4)
        n1, n2, n3, n4 = (of.get(k, 0) for k in (1, 2, 3, 4))
        if min(n1, n2, n3, n4) == 0:
            return (0.5, 1.0, 1.5)
        y = n1 / (n1 + 2 * n2)
        # each discount kept inside (0, k]: a context must always leave some mass to its backoff
        return tuple(min(k, max(0.05, k - (k + 1) * y * nk1 / nk)) for k, nk, nk1 in ((1, n1, n2), (2, n2, n3), (3, n3, n4)))  # type: ignore[return-value]

    def discount(count: float, ds: tuple[float, float, float]) -> float:
        return ds[0] if count == 1 else ds[1] if count == 2 else ds[2]

    vocabulary = set(counts[1]) | {g for g in raw[1]}
    ds1 = discounts(1)
    total1 = sum(counts[1].values())
    mass1 = sum(discount(c, ds1) for c in counts[1].values())
    uniform = 1 / (len(vocabulary) + 1)
    unigram = {c: max(0.0, counts[1].get(c, 0) - discount(counts[1].get(c, 0), ds1)) / total1 + mass1 / total1 * uniform for c in vocabulary}
    unknown = mass1 / total1 * uniform

    ngrams: dict[str, float] = {c: math.log(p) for c, p in unigram.items()}
    backoff: dict[str, float] = {}
    probability: dict[str, float] = dict(unigram)
    for n in range(2, order + 1):
        ds = discounts(n)
        for context, chars in followers_of(counts[n]).items():
            n_h = sum(chars.values())
            discounted = {char: discount(c, ds) for char, c in chars.items()}
            gamma = sum(discounted.values()) / n_h
            backoff[context] = math.log(gamma) if gamma > 0 else -99.0
            for char, count in chars.items():
                gram = context + char
                if n >= 3 and raw[n].get(gram, 0) < min_count:
                    continue
                p = max(0.0, count - discounted[char]) / n_h + gamma * lower_probability(gram, probability, backoff, unknown)
                probability[gram] = p
                ngrams[gram] = math.log(p)
    return backoff_document(ngrams, backoff, unknown)


def interpolate(first: dict, second: dict, weight: float, order: int) -> dict:
    """The linear interpolation weight * P_first + (1 - weight) * P_second of two backoff models, as one backoff
    model (SRILM's static mixing, `ngram -mix-lm`): every n-gram either stores gets the mixed probability, and
    each context the backoff weight that makes its distribution sum to one over the mixed lower order. For
    characters neither model stores after a context, the lower order stands in for the exact mixture. Both
    models should know the same alphabet (corpus_lines.py cuts a corpus to the transcriptions'): a character only
    one of them knows gets the other's per-symbol unknown mass."""
    a, b = CharNgram.from_json(first, order), CharNgram.from_json(second, order)
    mixed = CharNgram(order, {}, {}, math.log(weight * math.exp(a.unknown) + (1 - weight) * math.exp(b.unknown)))
    for context, followers in sorted(followers_of(dict.fromkeys(set(a.ngrams) | set(b.ngrams), 0.0)).items(), key=lambda item: (len(item[0]), item[0])):
        probabilities = {c: weight * math.exp(a.context_logp(context, c)) + (1 - weight) * math.exp(b.context_logp(context, c)) for c in followers}
        if context:
            # shorter contexts come first, so the mixed lower order is complete here
            lower = sum(math.exp(mixed.context_logp(context[1:], c)) for c in followers)
            mixed.backoff[context] = math.log(max(1e-9, 1 - sum(probabilities.values())) / max(1e-9, 1 - lower))
        for c, p in probabilities.items():
            mixed.ngrams[context + c] = math.log(p)
    return backoff_document(mixed.ngrams, mixed.backoff, math.exp(mixed.unknown))


PACKED_FORMAT = "hwr-char-ngram/2"
PACKED_MAGIC = (PACKED_FORMAT + "\n").encode("ascii")


def gram_key(gram: str, index: dict[str, int], radix: int) -> int:
    """A gram as one number: its symbols' indices (from 1) as digits in base `radix`, the first the most significant."""
    key = 0
    for ch in gram:
        key = key * radix + index[ch]
    return key


def pack_document(document: dict) -> bytes:
    """The packed form (`hwr-char-ngram/2`, docs/recognition.md, "Language model files"): a magic line, a JSON
    header line (the symbols, and per model its unknown log probability and table sizes), then per model two
    tables, the n-grams and the backoff contexts, each as its ascending keys (unsigned LEB128 varints of the
    differences from the previous key, the first from 0) followed by its values in thousandths (int32, little
    endian; the JSON form's three decimals, exactly). The service reads it into typed arrays without a
    JavaScript object per n-gram."""
    import numpy as np

    models = document["models"]
    symbols = sorted({ch for m in models.values() for table in (m["ngrams"], m["backoff"]) for gram in table for ch in gram} | {document["boundary"]})
    radix = len(symbols) + 1
    if radix ** document["order"] > 2**53:
        raise ValueError(f"{len(symbols)} symbols at order {document['order']} do not fit a float64 key")
    index = {ch: i + 1 for i, ch in enumerate(symbols)}
    header = {
        "format": PACKED_FORMAT,
        **{k: document[k] for k in ("order", "boundary", "logBase", "source") if k in document},
        "symbols": symbols,
        "models": [{"name": name, "unknown": m["unknown"], "ngrams": len(m["ngrams"]), "backoff": len(m["backoff"])} for name, m in models.items()],
    }
    parts = [PACKED_MAGIC, json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"]
    for m in models.values():
        for table in (m["ngrams"], m["backoff"]):
            pairs = sorted((gram_key(g, index, radix), v) for g, v in table.items())
            deltas, previous = bytearray(), 0
            for key, _ in pairs:
                delta, previous = key - previous, key
                while delta >= 0x80:
                    deltas.append((delta & 0x7F) | 0x80)
                    delta >>= 7
                deltas.append(delta)
            parts.append(bytes(deltas))
            parts.append(np.array([round(v * 1000) for _, v in pairs], dtype="<i4").tobytes())
    return b"".join(parts)


def unpack_document(data: bytes) -> dict:
    """A packed file back as the JSON form's document (n-grams and contexts as strings)."""
    import numpy as np

    end = data.index(b"\n", len(PACKED_MAGIC))
    header = json.loads(data[len(PACKED_MAGIC) : end])
    symbols, radix = header["symbols"], len(header["symbols"]) + 1
    offset = end + 1

    def gram(key: int) -> str:
        chars = []
        while key:
            key, digit = divmod(key, radix)
            chars.append(symbols[digit - 1])
        return "".join(reversed(chars))

    models = {}
    for m in header["models"]:
        tables = []
        for count in (m["ngrams"], m["backoff"]):
            keys, key = [], 0
            for _ in range(count):
                delta = shift = 0
                while True:
                    byte = data[offset]
                    offset += 1
                    delta |= (byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80:
                        break
                key += delta
                keys.append(key)
            values = np.frombuffer(data, dtype="<i4", count=count, offset=offset).tolist()
            offset += 4 * count
            tables.append({gram(k): v / 1000 for k, v in zip(keys, values)})
        models[m["name"]] = {"ngrams": tables[0], "backoff": tables[1], "unknown": m["unknown"]}
    if offset != len(data):
        raise ValueError("bytes after the tables")
    return {**{k: v for k, v in header.items() if k not in ("symbols", "models")}, "models": models}


def write_document(path: Path, document: dict) -> None:
    """The LM file: packed when its name has a .bin suffix (lm.bin.gz), else JSON; gzip-compressed when its name
    ends in .gz (no name or time in the header: the same bytes for the same model)."""
    if ".bin" in path.suffixes:
        data = pack_document(document)
    else:
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0) if path.suffix == ".gz" else data)


def read_document(path: Path) -> dict:
    """An LM file, JSON or packed, plain or gzip-compressed (told by its first bytes, as the service's reader does)."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return unpack_document(data) if data.startswith(PACKED_MAGIC) else json.loads(data)


def read_texts(tsv: Path) -> list[tuple[str, str]]:
    import csv

    out = []
    with open(tsv, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            text = unicodedata.normalize("NFC", row["text_norm"]).strip()
            if text:
                out.append((row["lang"], text))
    return out


def perplexity_per_char(model: CharNgram, texts: list[str]) -> float:
    total = sum(model.line_logp(t) for t in texts)
    chars = sum(len(t) + 1 for t in texts)
    return math.exp(-total / chars)


def read_lexicon(path: Path, alphabet: set[str]) -> list[str]:
    """One word per line (a hunspell form list, /usr/share/dict/*): NFC, '/flags' and trailing fields cut,
    words with a character the recognizer cannot write (not in `alphabet`) left out, duplicates once."""
    words: dict[str, None] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            word = unicodedata.normalize("NFC", raw.split("/", 1)[0].split()[0] if raw.split() else "")
            if word and all(ch in alphabet for ch in word) and any(ch.isalpha() for ch in word):
                words[word] = None
    return list(words)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description="Build the character n-gram LM from the htr-lines training transcriptions.")
    p.add_argument("--dataset", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "htr-lines")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--order", type=int, default=6)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--languages", default="en,fr", help="per-language models besides the joint one ('' for joint only)")
    p.add_argument("--lexicon", action="append", default=[], metavar="LANG=FILE[@WEIGHT]",
                   help="word list of a language (repeatable): each of its words counts as WEIGHT occurrences "
                        "(default --lexicon-weight) in running text of that language's model")
    p.add_argument("--lexicon-weight", type=float, default=0.01, help="count of one lexicon word against one occurrence in the transcriptions")
    p.add_argument("--lexicon-min", type=int, default=1, help="n-grams of order >= 3 not in the transcriptions are kept when the word lists have them this many times")
    p.add_argument("--joint-lexicon", action="store_true", help="add the lexicons to the joint model 'all' too (default: transcriptions only)")
    p.add_argument("--corpus", action="append", default=[], metavar="LANG=FILE@WEIGHT",
                   help="running text of a language, one line per line (corpus_lines.py; repeatable): that language's "
                        "model becomes WEIGHT x the transcriptions' + (1 - WEIGHT) x the corpus's (Kneser-Ney only)")
    p.add_argument("--corpus-min-count", type=int, default=20, help="n-grams of order >= 3 kept from the corpus when seen this many times")
    p.add_argument("--smoothing", choices=("witten-bell", "kneser-ney"), default="witten-bell",
                   help="interpolated Witten-Bell (the shipped LM's) or modified Kneser-Ney (transcriptions only, no --lexicon)")
    args = p.parse_args(argv)
    if args.smoothing == "kneser-ney" and args.lexicon:
        raise SystemExit("--lexicon works with --smoothing witten-bell only")
    if args.corpus and args.smoothing != "kneser-ney":
        raise SystemExit("--corpus works with --smoothing kneser-ney only")
    corpora: dict[str, tuple[Path, float]] = {}
    for spec in args.corpus:
        lang, _, rest = spec.partition("=")
        file, _, weight = rest.rpartition("@")
        corpora[lang] = (Path(file), float(weight))

    train = read_texts(args.dataset / "train.tsv")
    val = read_texts(args.dataset / "val.tsv")
    alphabet = {ch for _, t in train for ch in t}
    lexicons: list[tuple[str, list[Counter], float]] = []  # (language, counts, weight per word)
    sources, corpus_sources = [], []
    for spec in args.lexicon:
        lang, _, rest = spec.partition("=")
        file, _, weight = rest.partition("@")
        words = read_lexicon(Path(file), alphabet)
        lexicons.append((lang, count_words(words, args.order), float(weight) if weight else args.lexicon_weight))
        sources.append(f"{Path(file).name} ({lang}, {len(words)} words, weight {lexicons[-1][2]})")
        print(f"lexicon {file}: {len(words)} words for {lang}", flush=True)
    groups = {"all": None, **{lang: lang for lang in args.languages.split(",") if lang}}
    models = {}
    for name, lang in groups.items():
        texts = [t for l, t in train if lang is None or l == lang]
        extra = [(c, w) for l, c, w in lexicons if l == lang or (lang is None and args.joint_lexicon)]
        if args.smoothing == "kneser-ney":
            models[name] = estimate_kneser_ney(texts, args.order, args.min_count)
            if lang in corpora:
                file, weight = corpora[lang]
                lines = [line for line in file.read_text(encoding="utf-8").split("\n") if line]
                corpus_model = estimate_kneser_ney(lines, args.order, args.corpus_min_count)
                models[name] = interpolate(models[name], corpus_model, weight, args.order)
                corpus_sources.append(f"{file.name} ({lang}, {len(lines)} lines, n-grams of order >= 3 from {args.corpus_min_count} occurrences, "
                               f"interpolated at {1 - weight:g})")
                print(f"corpus {file}: {len(lines)} lines, {len(corpus_model['ngrams'])} n-grams for {lang}", flush=True)
        else:
            models[name] = estimate(texts, args.order, args.min_count, extra or None, args.lexicon_min)
        lm = CharNgram.from_json(models[name], args.order)
        held_out = [t for l, t in val if lang is None or l == lang]
        print(
            f"{name}: {len(texts)} lines, {len(models[name]['ngrams'])} n-grams, {len(models[name]['backoff'])} contexts, "
            f"validation perplexity per char {perplexity_per_char(lm, held_out):.2f}",
            flush=True,
        )
    source = "htr-lines train.tsv text_norm (NFC)" + ("; modified Kneser-Ney" if args.smoothing == "kneser-ney" else "")
    if corpus_sources:
        source += "; per-language models interpolated with running text: " + ", ".join(corpus_sources)
    if sources:
        source += f"; word lists, each word as a fraction of an occurrence, n-grams only they have kept from {args.lexicon_min} occurrences ({'all models' if args.joint_lexicon else 'per-language models'}): " + ", ".join(sources)
    document = {
        "format": FORMAT,
        "order": args.order,
        "boundary": BOUNDARY,
        "logBase": "e",
        "source": source,
        "models": models,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_document(args.out, document)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main(sys.argv[1:])

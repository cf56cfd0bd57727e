/* The per-text kernels of the canonical form (`packer.records`), of sentences
 * (`packer.units`, `packer.statements`) and of near-duplicate sketches (`packer.sketch`),
 * the reprint pair search's pair count (`packer.reprints`), the question terms a text
 * holds (`packer.records`) and its runs of capitalized words (`packer.typed_claims`), in C.
 *
 * Each function returns exactly what its pure-Python twin in `packer.records`,
 * `packer.units`, `packer.statements`, `packer.sketch`, `packer.reprints` or
 * `packer.typed_claims` returns, for
 * every input (a property test holds them together, over all of Unicode for the texts):
 * the character classes are the ones Python's `re` uses for str patterns (`\d` is
 * Py_UNICODE_ISDECIMAL, `\w` is Py_UNICODE_ISALNUM or "_", `\s` and `str.split()` are
 * Py_UNICODE_ISSPACE). The module is optional: setup
 * builds it when a C compiler is present, and `packer.native` gives None when it
 * is absent, so the twins run.
 *
 * Why C: the canonical words of a passage were the largest cost of packing a
 * passage seen for the first time after the tokenizer itself (a regex pass and
 * a Python string per word, 30 us for a 560-character paragraph); one pass over
 * the characters here costs a few microseconds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* `packer.records.SYMBOLS`, in its order (a test compares the two). */
static const Py_UCS4 SYMBOLS[] = {
    0x25,   0x2030, 0x24,   0x20AC, 0xA3,   0xA5,   0x20B9, 0x20A9, 0x20BD,
    0xA2,   0x20BA, 0x20AA, 0x20AB, 0x20A6, 0x20B1, 0x20B4, 0x20B8, 0x20BF,
    0xA4,   0x3C,   0x3E,   0x3D,   0x2264, 0x2265, 0x2260, 0x2248, 0xB1,
    0x7E,   0x207A, 0x207B, 0x207C, 0x208A, 0x208B, 0x208C,
};
#define N_SYMBOLS (sizeof(SYMBOLS) / sizeof(SYMBOLS[0]))

static inline int is_decimal(Py_UCS4 c) {
    return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c);
}

static inline int is_word(Py_UCS4 c) {
    if (c < 128) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    }
    return Py_UNICODE_ISALNUM(c);
}

/* `[^\W\d_]`: a word character that is neither a decimal digit nor "_". */
static inline int is_letter(Py_UCS4 c) {
    return is_word(c) && !is_decimal(c) && c != '_';
}

static inline int is_symbol(Py_UCS4 c) {
    if (c < 128) { /* the ASCII symbols, without a pass over the table for every space */
        return c == '%' || c == '$' || c == '<' || c == '>' || c == '=' || c == '~';
    }
    for (size_t k = 0; k < N_SYMBOLS; k++) {
        if (SYMBOLS[k] == c) return 1;
    }
    return 0;
}

/* `\d+(?:\.\d+)*` from `i` (a decimal digit): where the number ends. */
static Py_ssize_t number_end(const Py_UCS4 *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && is_decimal(s[i])) i++;
    while (i + 1 < n && s[i] == '.' && is_decimal(s[i + 1])) {
        i += 2;
        while (i < n && is_decimal(s[i])) i++;
    }
    return i;
}

/* `_THOUSANDS.sub("", ...)`: drop each comma between a digit and exactly three digits. */
static Py_ssize_t drop_thousands(Py_UCS4 *s, Py_ssize_t n) {
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = s[i];
        if (c == ',' && i >= 1 && is_decimal(s[i - 1]) && i + 3 < n && is_decimal(s[i + 1]) &&
            is_decimal(s[i + 2]) && is_decimal(s[i + 3]) && (i + 4 >= n || !is_decimal(s[i + 4]))) {
            continue;
        }
        s[out++] = c;
    }
    return out;
}

/* `_ACRONYM_DOT.sub("", ...)`: drop each period between two single letters ("U.S"). The
 * look-arounds read the input as it was before this pass, so the kept characters go to
 * `out` while `s` stays intact. */
static Py_ssize_t drop_acronym_dots(const Py_UCS4 *s, Py_ssize_t n, Py_UCS4 *out) {
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = s[i];
        if (c == '.' && i >= 1 && is_letter(s[i - 1]) && (i < 2 || !is_word(s[i - 2])) &&
            i + 1 < n && is_letter(s[i + 1]) && (i + 2 >= n || !is_word(s[i + 2]))) {
            continue;
        }
        out[m++] = c;
    }
    return m;
}

/* The words of `s` (`_WORD.findall`): numbers, words, meaning symbols and signed
 * numbers, in order. Each word is s[starts[k]:ends[k]]; returns how many (at most n). */
static Py_ssize_t scan(const Py_UCS4 *s, Py_ssize_t n, Py_ssize_t *starts, Py_ssize_t *ends) {
    Py_ssize_t count = 0, i = 0;
    while (i < n) {
        Py_UCS4 c = s[i];
        Py_ssize_t end = -1;
        if (is_decimal(c)) {
            end = number_end(s, n, i);
        } else if (is_word(c)) {
            end = i + 1;
            while (end < n && is_word(s[end])) end++;
        } else if (is_symbol(c)) {
            end = i + 1;
        } else if ((c == '-' || c == '+') && i + 1 < n && is_decimal(s[i + 1]) &&
                   !(i >= 1 && (is_word(s[i - 1]) || s[i - 1] == '.'))) {
            end = number_end(s, n, i + 1);
        }
        if (end < 0) {
            i++;
            continue;
        }
        starts[count] = i;
        ends[count] = end;
        count++;
        i = end;
    }
    return count;
}

/* The folded text with thousands separators and acronym dots dropped, then its words'
 * bounds: what both entry points share. Fills `*kept` (free it with PyMem_Free) and
 * `*starts`/`*ends` (one allocation: free `*starts`); returns the word count, -1 on error. */
static Py_ssize_t words_of(PyObject *text, Py_UCS4 **kept, Py_ssize_t **starts, Py_ssize_t **ends) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected a str");
        return -1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 *s = PyUnicode_AsUCS4Copy(text);
    if (s == NULL) return -1;
    size_t room = (size_t)(n > 0 ? n : 1);
    *kept = PyMem_Malloc(room * sizeof(Py_UCS4));
    *starts = PyMem_Malloc(2 * room * sizeof(Py_ssize_t));
    if (*kept == NULL || *starts == NULL) {
        PyMem_Free(s);
        PyMem_Free(*kept);
        PyMem_Free(*starts);
        PyErr_NoMemory();
        return -1;
    }
    *ends = *starts + room;
    n = drop_thousands(s, n);
    n = drop_acronym_dots(s, n, *kept);
    PyMem_Free(s);
    return scan(*kept, n, *starts, *ends);
}

static PyObject *substring(const Py_UCS4 *s, Py_ssize_t start, Py_ssize_t end) {
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, s + start, end - start);
}

static PyObject *words(PyObject *module, PyObject *text) {
    Py_UCS4 *kept;
    Py_ssize_t *starts, *ends;
    Py_ssize_t count = words_of(text, &kept, &starts, &ends);
    if (count < 0) return NULL;
    PyObject *result = PyList_New(count);
    for (Py_ssize_t k = 0; result != NULL && k < count; k++) {
        PyObject *word = substring(kept, starts[k], ends[k]);
        if (word == NULL) Py_CLEAR(result);
        else PyList_SET_ITEM(result, k, word);
    }
    PyMem_Free(kept);
    PyMem_Free(starts);
    return result;
}

/* `negators` as code points, for telling a word of the joined canonical str apart from them
 * without a str per word: each negator's kind, data and length (non-str members, which equal
 * no word, are left out). */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Term;

/* The str members of `set` as `Term`s, read from `*held`, a tuple of its members that keeps
 * them alive whatever becomes of the set (release it and free `*terms` after use); the
 * count, -1 on error. */
static Py_ssize_t terms_of(PyObject *set, Term **terms, PyObject **held) {
    *held = PySequence_Tuple(set);
    if (*held == NULL) return -1;
    Py_ssize_t size = PyTuple_GET_SIZE(*held), n = 0;
    *terms = PyMem_Malloc((size_t)(size ? size : 1) * sizeof(Term));
    if (*terms == NULL) {
        Py_CLEAR(*held);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < size; k++) {
        PyObject *item = PyTuple_GET_ITEM(*held, k);
        if (PyUnicode_Check(item)) {
            (*terms)[n++] = (Term){PyUnicode_KIND(item), PyUnicode_DATA(item),
                                   PyUnicode_GET_LENGTH(item)};
        }
    }
    return n;
}

/* Whether s[0:length] is one of `terms`. */
static int is_term(const Py_UCS4 *s, Py_ssize_t length, const Term *terms, Py_ssize_t n) {
    for (Py_ssize_t t = 0; t < n; t++) {
        if (terms[t].length != length) continue;
        Py_ssize_t i = 0;
        while (i < length && PyUnicode_READ(terms[t].kind, terms[t].data, i) == s[i]) i++;
        if (i == length) return 1;
    }
    return 0;
}

/* The first characters of a set of `Term`s: the ASCII ones as bits, and whether any is
 * wider (then every word is compared). Most words open with none of the negators' letters
 * (c, n, t): they are told apart at their first character, not against every negator. */
typedef struct {
    uint64_t ascii[2];
    int wide;
} Openings;

static Openings openings_of(const Term *terms, Py_ssize_t n) {
    Openings o = {{0, 0}, 0};
    for (Py_ssize_t t = 0; t < n; t++) {
        if (terms[t].length == 0) continue; /* no word is empty */
        Py_UCS4 c = PyUnicode_READ(terms[t].kind, terms[t].data, 0);
        if (c < 128) o.ascii[c >> 6] |= (uint64_t)1 << (c & 63);
        else o.wide = 1;
    }
    return o;
}

static inline int may_open(Openings o, Py_UCS4 c) {
    return c < 128 ? (int)(o.ascii[c >> 6] >> (c & 63) & 1) : o.wide;
}

static inline uint64_t span_hash(const Py_UCS4 *s, Py_ssize_t length) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < length; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* `packer.records.text_words`: of a folded text, (" ".join(words), the first `limit` words
 * each once, those of them not in `stopwords`, whether a word is in `negators`), in one pass
 * over its words. The first words are cut from the joined str (a copy in its narrow kind),
 * not converted from UCS-4 again, and told apart, as the negators are found, on the code
 * points, without a str per word or a hash of one; only the distinct first words are looked
 * up in `stopwords`. 5.4 us for a HotpotQA paragraph. Rejected: a call per part (the
 * canonical form with a str of every word, then the first words, then the negators among
 * all the words): 7.8 us. */
static PyObject *text_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyAnySet_Check(args[2]) || !PyAnySet_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "text_words(folded, limit, stopwords: set, negators: set)");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "text_words() needs a limit of 0 or more");
        return NULL;
    }
    Term *negators;
    PyObject *held;
    Py_ssize_t n_negators = terms_of(args[3], &negators, &held);
    if (n_negators < 0) return NULL;
    Openings opening = openings_of(negators, n_negators);
    Py_UCS4 *kept;
    Py_ssize_t *starts, *ends;
    Py_ssize_t count = words_of(args[0], &kept, &starts, &ends);
    if (count < 0) {
        PyMem_Free(negators);
        Py_DECREF(held);
        return NULL;
    }
    Py_ssize_t first_n = limit < count ? limit : count;
    /* the words, one space apart (two adjacent words, "123abc", gain a character) */
    Py_UCS4 *out = PyMem_Malloc((size_t)(2 * count + 1) * sizeof(Py_UCS4) +
                                (size_t)(count ? ends[count - 1] : 0) * sizeof(Py_UCS4));
    Py_ssize_t *firsts = PyMem_Malloc((size_t)(first_n ? first_n : 1) * sizeof(Py_ssize_t));
    uint64_t *hashes = PyMem_Malloc((size_t)(first_n ? first_n : 1) * sizeof(uint64_t));
    PyObject *canonical = NULL, *first = NULL, *content = NULL, *result = NULL;
    int negation = 0;
    Py_ssize_t m = 0, c = 0;
    if (out == NULL || firsts == NULL || hashes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        if (k > 0) out[at++] = ' ';
        Py_ssize_t from = at;
        for (Py_ssize_t i = starts[k]; i < ends[k]; i++) out[at++] = kept[i];
        starts[k] = from; /* now the word's offsets in the joined str */
        ends[k] = at;
        if (!negation && at > from && may_open(opening, out[from])) {
            negation = is_term(out + from, at - from, negators, n_negators);
        }
        if (k < first_n) { /* the first words, each once */
            uint64_t h = span_hash(out + from, at - from);
            int seen = 0;
            for (Py_ssize_t j = 0; j < m && !seen; j++) {
                Py_ssize_t w = firsts[j];
                seen = hashes[j] == h && ends[w] - starts[w] == at - from &&
                       memcmp(out + starts[w], out + from, (size_t)(at - from) * sizeof(Py_UCS4)) == 0;
            }
            if (!seen) hashes[m] = h, firsts[m++] = k;
        }
    }
    canonical = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, at);
    first = canonical ? PyTuple_New(m) : NULL;
    content = first ? PyTuple_New(m) : NULL;
    if (content == NULL) goto done;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *word = PyUnicode_Substring(canonical, starts[firsts[j]], ends[firsts[j]]);
        if (word == NULL) goto done;
        PyTuple_SET_ITEM(first, j, word);
        int stop = PySet_Contains(args[2], word);
        if (stop < 0) goto done;
        if (!stop) Py_INCREF(word), PyTuple_SET_ITEM(content, c++, word);
    }
    if (_PyTuple_Resize(&content, c) < 0) goto done;
    result = Py_BuildValue("(OOOO)", canonical, first, content, negation ? Py_True : Py_False);
done:
    Py_XDECREF(canonical);
    Py_XDECREF(first);
    Py_XDECREF(content);
    PyMem_Free(out);
    PyMem_Free(firsts);
    PyMem_Free(hashes);
    PyMem_Free(kept);
    PyMem_Free(starts);
    PyMem_Free(negators);
    Py_DECREF(held);
    return result;
}

/* `packer.statements.sentence_words`: a folded sentence's content words (longer than one
 * character, not in `not_content`) and its count of words in `negators` ("no" before a
 * word opening with a digit is "number", not counted), in one pass and without a list of
 * the words: a sentence's words were made in Python only to be filtered and counted. */
static PyObject *sentence_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyAnySet_Check(args[1]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "sentence_words(text, not_content, negators): two sets");
        return NULL;
    }
    Py_UCS4 *kept;
    Py_ssize_t *starts, *ends;
    Py_ssize_t count = words_of(args[0], &kept, &starts, &ends);
    if (count < 0) return NULL;
    PyObject *content = PyFrozenSet_New(NULL);
    Py_ssize_t negations = 0;
    for (Py_ssize_t k = 0; content != NULL && k < count; k++) {
        Py_ssize_t start = starts[k], length = ends[k] - starts[k];
        PyObject *word = substring(kept, start, ends[k]);
        int negator = word == NULL ? -1 : PySet_Contains(args[2], word);
        int plain = negator < 0 || length < 2 ? 0 : PySet_Contains(args[1], word);
        if (negator < 0 || plain < 0 || (length > 1 && !plain && PySet_Add(content, word) < 0)) {
            Py_CLEAR(content);
        } else if (negator && !(length == 2 && kept[start] == 'n' && kept[start + 1] == 'o' &&
                                k + 1 < count && Py_UNICODE_ISDIGIT(kept[starts[k + 1]]))) {
            negations++;
        }
        Py_XDECREF(word);
    }
    PyMem_Free(kept);
    PyMem_Free(starts);
    if (content == NULL) return NULL;
    return Py_BuildValue("(Nn)", content, negations);
}

/* --- sentences (`packer.units`) ------------------------------------------- */

static inline int is_closer(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == 0x201D || c == 0x2019 || c == ')' || c == ']';
}

static inline int is_opener(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == 0x201C || c == 0x2018 || c == '(' || c == '[';
}

static inline int is_upper_or_digit(Py_UCS4 c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* `[\"'“‘(\[]?[A-Z0-9]` at `i`, within [i, n). */
static int opens(int kind, const void *data, Py_ssize_t i, Py_ssize_t n) {
    if (i >= n) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (is_upper_or_digit(c)) return 1;
    return is_opener(c) && i + 1 < n && is_upper_or_digit(PyUnicode_READ(kind, data, i + 1));
}

/* `units._ends_abbreviation(text, end)`: 1, 0, or -1 on error. */
static int ends_abbreviation(PyObject *text, int kind, const void *data, Py_ssize_t end,
                             PyObject *abbreviations) {
    Py_ssize_t start = end;
    while (start > 0) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start - 1);
        if (!(Py_UNICODE_ISALPHA(c) || c == '.')) break;
        start--;
    }
    Py_ssize_t a = start, b = end; /* word = text[start:end].strip(".") */
    while (a < b && PyUnicode_READ(kind, data, a) == '.') a++;
    while (b > a && PyUnicode_READ(kind, data, b - 1) == '.') b--;
    if (b - a == 1) return 1;
    for (Py_ssize_t i = a; i < b; i++) {
        if (PyUnicode_READ(kind, data, i) == '.') return 1;
    }
    PyObject *word = PyUnicode_Substring(text, a, b);
    if (word == NULL) return -1;
    PyObject *lower = PyObject_CallMethod(word, "lower", NULL);
    Py_DECREF(word);
    if (lower == NULL) return -1;
    int found = PySet_Contains(abbreviations, lower);
    Py_DECREF(lower);
    return found;
}

/* `[.!?][\"'”’)\]]*$` on text[start:end] (a sentence never ends in a newline). */
static int closes(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    Py_ssize_t i = end;
    while (i > start && is_closer(PyUnicode_READ(kind, data, i - 1))) i--;
    if (i == start) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, i - 1);
    return c == '.' || c == '!' || c == '?';
}

static int append_sentence(PyObject *out, int kind, const void *data, Py_ssize_t start,
                           Py_ssize_t end) {
    int done = opens(kind, data, start, end) && closes(kind, data, start, end);
    PyObject *row = Py_BuildValue("(nnO)", start, end, done ? Py_True : Py_False);
    if (row == NULL) return -1;
    int failed = PyList_Append(out, row);
    Py_DECREF(row);
    return failed;
}

/* `units.sentence_bounds`: each sentence's (start, end, complete). */
static PyObject *sentence_bounds(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "sentence_bounds(text: str, abbreviations: frozenset)");
        return NULL;
    }
    PyObject *text = args[0], *abbreviations = args[1];
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t start = 0;
    while (start < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, start))) start++;
    Py_ssize_t p = 0;
    while (p < n) {
        /* `_END`: [.!?] closers* \s+ (?= opener? [A-Z0-9]) */
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if (c != '.' && c != '!' && c != '?') {
            p++;
            continue;
        }
        Py_ssize_t q = p + 1;
        while (q < n && is_closer(PyUnicode_READ(kind, data, q))) q++;
        Py_ssize_t r = q;
        while (r < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, r))) r++;
        if (r == q || !opens(kind, data, r, n)) {
            p++;
            continue;
        }
        if (c == '.') {
            int abbreviation = ends_abbreviation(text, kind, data, p, abbreviations);
            if (abbreviation < 0) goto error;
            if (abbreviation) {
                p = r; /* the match is consumed; the sentence goes on */
                continue;
            }
        }
        if (q > start && append_sentence(out, kind, data, start, q) < 0) goto error;
        start = r;
        p = r;
    }
    Py_ssize_t end = n;
    while (end > 0 && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    if (end > start && append_sentence(out, kind, data, start, end) < 0) goto error;
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

static PyObject *split_count(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "split_count() takes a str");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t count = 0;
    int inside = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int space = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i));
        if (!space && !inside) count++;
        inside = !space;
    }
    return PyLong_FromSsize_t(count);
}

/* --- MinHash sketches (`packer.sketch`) ------------------------------------ */

static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static void sha1_block(uint32_t h[5], const unsigned char *p) {
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    }
    for (int t = 16; t < 80; t++) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (t < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t next = rotl(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = next;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

/* The first four bytes of the SHA-1 digest of s[0:n], read little-endian (FIPS 180-4). */
static uint32_t sha1_first_word(const unsigned char *s, size_t n) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    size_t full = n / 64;
    for (size_t i = 0; i < full; i++) sha1_block(h, s + 64 * i);
    unsigned char tail[128] = {0};
    size_t rest = n - 64 * full;
    memcpy(tail, s + 64 * full, rest);
    tail[rest] = 0x80;
    size_t blocks = rest + 9 <= 64 ? 1 : 2;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) tail[64 * blocks - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < blocks; i++) sha1_block(h, tail + 64 * i);
    uint32_t x = h[0];
    return (x >> 24) | ((x >> 8) & 0xFF00) | ((x << 8) & 0xFF0000) | (x << 24);
}

/* MurmurHash3's 32-bit finalizer. */
static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6B;
    h ^= h >> 13;
    h *= 0xC2B2AE35;
    return h ^ (h >> 16);
}

/* `sketch.minhash(text, shingle_words, perms)`: `perms` holds every a_k, then every
 * b_k, as little-endian uint32. Each shingle (its words one space apart, in UTF-8) is
 * hashed, finalized and permuted; the least value of each permutation is kept. The
 * words are the runs of non-space characters, as `str.split()` finds them. */
static PyObject *minhash(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "minhash(text: str, shingle_words: int, perms: bytes)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t n_words = PyLong_AsSsize_t(args[1]);
    if (n_words == -1 && PyErr_Occurred()) return NULL;
    if (n_words < 1) {
        PyErr_SetString(PyExc_ValueError, "shingle_words must be at least 1");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[2]) / 8;
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(args[2]);
    Py_ssize_t utf8_len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &utf8_len);
    if (utf8 == NULL) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    /* each word's byte range in `utf8` */
    Py_ssize_t *starts = PyMem_Malloc((size_t)(n + 1) * 2 * sizeof(Py_ssize_t));
    unsigned char *shingle = PyMem_Malloc((size_t)utf8_len + 1);
    uint32_t *least = PyMem_Malloc((size_t)(size > 0 ? size : 1) * 3 * sizeof(uint32_t));
    if (starts == NULL || shingle == NULL || least == NULL) {
        PyMem_Free(starts);
        PyMem_Free(shingle);
        PyMem_Free(least);
        return PyErr_NoMemory();
    }
    Py_ssize_t *ends = starts + (n + 1);
    uint32_t *a = least + size, *b = least + 2 * size;
    for (Py_ssize_t k = 0; k < size; k++) {
        const unsigned char *pa = raw + 4 * k, *pb = raw + 4 * (size + k);
        a[k] = (uint32_t)pa[0] | (uint32_t)pa[1] << 8 | (uint32_t)pa[2] << 16 | (uint32_t)pa[3] << 24;
        b[k] = (uint32_t)pb[0] | (uint32_t)pb[1] << 8 | (uint32_t)pb[2] << 16 | (uint32_t)pb[3] << 24;
        least[k] = 0xFFFFFFFF;
    }
    Py_ssize_t count = 0, byte = 0;
    int inside = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int space = Py_UNICODE_ISSPACE(c);
        if (!space && !inside) starts[count] = byte;
        if (space && inside) ends[count++] = byte;
        inside = !space;
        byte += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    }
    if (inside) ends[count++] = byte;
    Py_ssize_t shingles = count > n_words ? count - n_words + 1 : 1;
    for (Py_ssize_t i = 0; i < shingles; i++) {
        size_t at = 0;
        for (Py_ssize_t j = i; j < i + n_words && j < count; j++) {
            if (j > i) shingle[at++] = ' ';
            memcpy(shingle + at, utf8 + starts[j], (size_t)(ends[j] - starts[j]));
            at += (size_t)(ends[j] - starts[j]);
        }
        uint32_t h = fmix32(sha1_first_word(shingle, at));
        for (Py_ssize_t k = 0; k < size; k++) {
            uint32_t v = a[k] * h + b[k];
            if (v < least[k]) least[k] = v;
        }
    }
    PyObject *out = PyTuple_New(size);
    for (Py_ssize_t k = 0; out != NULL && k < size; k++) {
        PyObject *value = PyLong_FromUnsignedLong(least[k]);
        if (value == NULL) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, k, value);
    }
    PyMem_Free(starts);
    PyMem_Free(shingle);
    PyMem_Free(least);
    return out;
}

/* The distinct words of a request for `sharing_pairs`: an open-addressing table from a
 * word (its hash, then equality, as a set tells its members) to its number. */
typedef struct {
    Py_hash_t hash;
    PyObject *word; /* NULL: an empty slot */
    Py_ssize_t id;
} Slot;

/* The number of `word` in `table` (`mask` + 1 slots, never full), a new one (`*next`, then
 * counted on) when it is not there yet; -1 on error. */
static Py_ssize_t word_id(Slot *table, size_t mask, PyObject *word, Py_ssize_t *next) {
    Py_hash_t h = PyObject_Hash(word);
    if (h == -1) return -1;
    for (size_t at = (size_t)h & mask;; at = (at + 1) & mask) {
        Slot *slot = table + at;
        if (slot->word == NULL) {
            slot->hash = h, slot->word = word, slot->id = (*next)++;
            return slot->id;
        }
        if (slot->hash == h) {
            int equal = PyObject_RichCompareBool(slot->word, word, Py_EQ);
            if (equal < 0) return -1;
            if (equal) return slot->id;
        }
    }
}

static int ascending(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* `packer.reprint_pairs.shared_openings`: every pair (i < j) of records of different `documents` whose
 * `words` (a tuple each) share at least one counted word and at least the smaller of their
 * two `needed` counts, in order; a word held by more than `widest` records is not counted.
 * Each distinct word of the request gets a number and the list of the records holding it;
 * a record adds one to each later record on the lists of its counted words, so a pair's
 * shared words are counted once, and only pairs sharing a word are ever read. Rejected:
 * a bit set of its words a record, a pair one popcount of two sets (2 us a request of 10
 * paragraphs, as here, but n^2 pairs each as wide as the request's words: 3,000 records
 * would read ~100 million 64-bit words); a sorted merge of each pair's hashes (9 us at 10). */
static PyObject *sharing_pairs(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        !PyList_Check(args[2]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "sharing_pairs(words: list of tuples, needed: list, "
                                         "documents: list, widest: int)");
        return NULL;
    }
    PyObject *words = args[0], *needed = args[1], *documents = args[2];
    Py_ssize_t n = PyList_GET_SIZE(words);
    if (PyList_GET_SIZE(needed) != n || PyList_GET_SIZE(documents) != n) {
        PyErr_SetString(PyExc_ValueError, "sharing_pairs() needs lists of one length");
        return NULL;
    }
    Py_ssize_t widest = PyLong_AsSsize_t(args[3]);
    if (widest == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *own = PyList_GET_ITEM(words, i);
        if (!PyTuple_Check(own)) {
            PyErr_SetString(PyExc_TypeError, "sharing_pairs() reads each record's words as a tuple");
            return NULL;
        }
        total += PyTuple_GET_SIZE(own);
    }
    size_t slots = 16;
    while (slots < 2 * (size_t)total) slots *= 2;
    size_t cells = (size_t)(total ? total : 1), rows = (size_t)(n ? n : 1);
    Slot *table = PyMem_Calloc(slots, sizeof(Slot));
    Py_ssize_t *ids = PyMem_Malloc(cells * sizeof(Py_ssize_t));   /* a record's distinct words */
    Py_ssize_t *start = PyMem_Malloc((rows + 1) * sizeof(Py_ssize_t)); /* of each record in ids */
    Py_ssize_t *last = PyMem_Malloc(cells * sizeof(Py_ssize_t));  /* a word's last record */
    Py_ssize_t *held = PyMem_Calloc(cells + 1, sizeof(Py_ssize_t)); /* records holding a word */
    Py_ssize_t *holders = PyMem_Malloc(cells * sizeof(Py_ssize_t)); /* by word, ascending */
    Py_ssize_t *cursor = PyMem_Malloc(cells * sizeof(Py_ssize_t));
    Py_ssize_t *shared = PyMem_Calloc(rows, sizeof(Py_ssize_t));  /* with the record read */
    Py_ssize_t *met = PyMem_Malloc(rows * sizeof(Py_ssize_t));    /* the later records met */
    double *least = PyMem_Malloc(rows * sizeof(double));
    Py_hash_t *document = PyMem_Malloc(rows * sizeof(Py_hash_t));
    PyObject *pairs = NULL;
    if (table == NULL || ids == NULL || start == NULL || last == NULL || held == NULL ||
        holders == NULL || cursor == NULL || shared == NULL || met == NULL || least == NULL ||
        document == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t next = 0, at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *own = PyList_GET_ITEM(words, i);
        start[i] = at;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(own); k++) {
            Py_ssize_t before = next;
            Py_ssize_t id = word_id(table, slots - 1, PyTuple_GET_ITEM(own, k), &next);
            if (id < 0) goto done;
            if (id < before && last[id] == i) continue; /* twice in one record: once */
            last[id] = i;
            held[id + 1]++;
            ids[at++] = id;
        }
        least[i] = PyFloat_AsDouble(PyList_GET_ITEM(needed, i));
        if (least[i] == -1.0 && PyErr_Occurred()) goto done;
        document[i] = PyObject_Hash(PyList_GET_ITEM(documents, i));
        if (document[i] == -1) goto done;
    }
    start[n] = at;
    for (Py_ssize_t w = 0; w < next; w++) held[w + 1] += held[w]; /* each word's first holder */
    memcpy(cursor, held, (size_t)(next ? next : 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t k = start[i]; k < start[i + 1]; k++) holders[cursor[ids[k]]++] = i;
    }
    memcpy(cursor, held, (size_t)(next ? next : 1) * sizeof(Py_ssize_t));
    pairs = PyList_New(0);
    for (Py_ssize_t i = 0; pairs != NULL && i < n; i++) {
        Py_ssize_t n_met = 0, n_kept = 0;
        for (Py_ssize_t k = start[i]; k < start[i + 1]; k++) {
            Py_ssize_t id = ids[k], from = ++cursor[id], to = held[id + 1];
            if (to - held[id] > widest) continue; /* held by too many records to tell */
            for (Py_ssize_t h = from; h < to; h++) {
                Py_ssize_t j = holders[h];
                if (shared[j]++ == 0) met[n_met++] = j;
            }
        }
        for (Py_ssize_t m = 0; m < n_met; m++) {
            Py_ssize_t j = met[m], common = shared[j];
            shared[j] = 0;
            double need = least[i]; /* `min(least, needed[j])`: the first unless the second is less */
            if (least[j] < need) need = least[j];
            if (!((double)common >= need)) continue;
            if (document[i] == document[j]) {
                int same = PyObject_RichCompareBool(PyList_GET_ITEM(documents, i),
                                                    PyList_GET_ITEM(documents, j), Py_EQ);
                if (same < 0) goto fail;
                if (same) continue;
            }
            met[n_kept++] = j; /* m >= n_kept: what is read is never overwritten */
        }
        qsort(met, (size_t)n_kept, sizeof(Py_ssize_t), ascending);
        for (Py_ssize_t m = 0; m < n_kept; m++) {
            PyObject *pair = Py_BuildValue("(nn)", i, met[m]);
            if (pair == NULL || PyList_Append(pairs, pair) < 0) {
                Py_XDECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
    }
    goto done;
fail:
    Py_CLEAR(pairs);
done:
    PyMem_Free(table);
    PyMem_Free(ids);
    PyMem_Free(start);
    PyMem_Free(last);
    PyMem_Free(held);
    PyMem_Free(holders);
    PyMem_Free(cursor);
    PyMem_Free(shared);
    PyMem_Free(met);
    PyMem_Free(least);
    PyMem_Free(document);
    return pairs;
}

/* `packer.reprints.shared_words`: how many words two sequences share, each word as often as
 * both hold it (the size of their multisets' intersection). The first sequence's words are
 * counted in a table, the second's taken from it: `Counter(a) & Counter(b)` built three
 * dicts a pair, in Python's own loop (15 us a pair of paragraphs, 8 us a candidate at
 * 3,000 candidates a request). */
/* The two word sequences of a pair kernel (a list or a tuple each) as tuples it holds: a
 * list could change under a word's hash or equality. -1, with the error set, when they
 * are not two such sequences. */
static int word_pair(PyObject *const *args, Py_ssize_t nargs, const char *usage, PyObject **a,
                     PyObject **b) {
    if (nargs != 2 || !(PyList_Check(args[0]) || PyTuple_Check(args[0])) ||
        !(PyList_Check(args[1]) || PyTuple_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    *a = PySequence_Tuple(args[0]);
    *b = *a ? PySequence_Tuple(args[1]) : NULL;
    if (*b == NULL) {
        Py_CLEAR(*a);
        return -1;
    }
    return 0;
}

static PyObject *shared_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *a, *b;
    if (word_pair(args, nargs, "shared_words(a: list or tuple, b: list or tuple)", &a, &b) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(a), total = n + PyTuple_GET_SIZE(b);
    size_t slots = 16;
    while (slots < 2 * (size_t)total) slots *= 2;
    Slot *table = PyMem_Calloc(slots, sizeof(Slot));
    Py_ssize_t *left = PyMem_Calloc((size_t)total + 1, sizeof(Py_ssize_t)); /* by word number */
    Py_ssize_t next = 0, shared = 0, id = 0;
    if (table == NULL || left == NULL) {
        PyErr_NoMemory();
        id = -1;
    }
    for (Py_ssize_t k = 0; k < total && id >= 0; k++) {
        PyObject *word = k < n ? PyTuple_GET_ITEM(a, k) : PyTuple_GET_ITEM(b, k - n);
        id = word_id(table, slots - 1, word, &next); /* a word only `b` holds: a new number */
        if (id < 0) break;
        if (k < n) left[id]++;
        else if (left[id] > 0) left[id]--, shared++;
    }
    PyMem_Free(table);
    PyMem_Free(left);
    Py_DECREF(a);
    Py_DECREF(b);
    return id < 0 ? NULL : PyLong_FromSsize_t(shared);
}

/* `packer.polarity.word_postings`: for each word of `sought` (a set), the indexes of the
 * `texts` (a tuple of words each) holding it, ascending, each once; words no text holds
 * are left out. A text's index is one int, put on each of its lists: the Python twin
 * intersected every text with the sought words, then appended to a list a word
 * (~60,000 appends a request of 3,000 candidates, 1,500 sought words, 12 us a
 * candidate). */
static PyObject *word_postings(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyAnySet_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "word_postings(sought: set, texts: list of tuples)");
        return NULL;
    }
    PyObject *sought = args[0], *texts = args[1], *out = PyDict_New();
    for (Py_ssize_t j = 0; out != NULL && j < PyList_GET_SIZE(texts); j++) {
        PyObject *words = PyList_GET_ITEM(texts, j);
        if (!PyTuple_Check(words)) {
            PyErr_SetString(PyExc_TypeError, "word_postings() reads each text's words as a tuple");
            Py_CLEAR(out);
            break;
        }
        Py_INCREF(words); /* the list may change under a word's hash or equality */
        PyObject *index = PyLong_FromSsize_t(j);
        int failed = index == NULL;
        for (Py_ssize_t k = 0; !failed && k < PyTuple_GET_SIZE(words); k++) {
            PyObject *word = PyTuple_GET_ITEM(words, k);
            int held = PySet_Contains(sought, word);
            if (held <= 0) {
                failed = held < 0;
                continue;
            }
            PyObject *list = PyDict_GetItemWithError(out, word); /* borrowed */
            if (list == NULL) {
                failed = PyErr_Occurred() != NULL || (list = PyList_New(0)) == NULL ||
                         PyDict_SetItem(out, word, list) < 0;
                Py_XDECREF(list); /* the dict holds it */
                if (failed) continue;
            }
            Py_ssize_t size = PyList_GET_SIZE(list);
            if (size == 0 || PyList_GET_ITEM(list, size - 1) != index) {
                failed = PyList_Append(list, index) < 0;
            }
        }
        Py_XDECREF(index);
        Py_DECREF(words);
        if (failed) Py_CLEAR(out);
    }
    return out;
}

/* The longest run of equal words of `a`[alo:ahi] and `b`[blo:bhi], the first found (lowest
 * in `a`, then in `b`), as difflib's `find_longest_match` finds it with no junk: `run` and
 * `last` hold the run ending at each position of `b` (shifted by one) for this row of `a`
 * and the one before, `set` and `set_last` which of them are not zero. */
typedef struct {
    const Py_ssize_t *a, *b, *start, *at; /* word numbers; `b`'s positions of a word by number */
    Py_ssize_t *run, *last, *set, *set_last;
} Runs;

static void longest_run(Runs *r, Py_ssize_t alo, Py_ssize_t ahi, Py_ssize_t blo, Py_ssize_t bhi,
                        Py_ssize_t best[3]) {
    Py_ssize_t besti = alo, bestj = blo, bestsize = 0, n_last = 0;
    for (Py_ssize_t i = alo; i < ahi; i++) {
        Py_ssize_t n_run = 0, id = r->a[i];
        for (Py_ssize_t p = r->start[id]; p < r->start[id + 1]; p++) {
            Py_ssize_t j = r->at[p];
            if (j < blo) continue;
            if (j >= bhi) break;
            Py_ssize_t k = r->run[j + 1] = r->last[j] + 1;
            r->set[n_run++] = j + 1;
            if (k > bestsize) besti = i - k + 1, bestj = j - k + 1, bestsize = k;
        }
        for (Py_ssize_t t = 0; t < n_last; t++) r->last[r->set_last[t]] = 0;
        Py_ssize_t *swap = r->last;
        r->last = r->run, r->run = swap;
        swap = r->set_last, r->set_last = r->set, r->set = swap;
        n_last = n_run;
    }
    for (Py_ssize_t t = 0; t < n_last; t++) r->last[r->set_last[t]] = 0;
    while (besti > alo && bestj > blo && r->a[besti - 1] == r->b[bestj - 1]) {
        besti--, bestj--, bestsize++;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi &&
           r->a[besti + bestsize] == r->b[bestj + bestsize]) {
        bestsize++;
    }
    best[0] = besti, best[1] = bestj, best[2] = bestsize;
}

static int by_first(const void *x, const void *y) {
    const Py_ssize_t *p = x, *q = y;
    return (p[0] > q[0]) - (p[0] < q[0]);
}

/* `packer.reprints.alignment`: how many words two sequences share in order, and the
 * stretches (i1, i2, j1, j2) where they differ, as difflib's `SequenceMatcher` (no junk,
 * no autojunk) finds them: the longest run of equal words, then the same on each side of
 * it. Words are numbered once a pair and runs tracked in arrays: difflib's dicts a row
 * took 90 us a pair of paragraphs (6 us a candidate at 3,000 candidates a request). */
static PyObject *alignment(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x, *y;
    if (word_pair(args, nargs, "alignment(a: list or tuple, b: list or tuple)", &x, &y) < 0) {
        return NULL;
    }
    Py_ssize_t la = PyTuple_GET_SIZE(x), lb = PyTuple_GET_SIZE(y), n = la + lb;
    size_t slots = 16;
    while (slots < 2 * (size_t)n) slots *= 2;
    size_t cells = (size_t)n + 2;
    Slot *table = PyMem_Calloc(slots, sizeof(Slot));
    Py_ssize_t *ids = PyMem_Malloc(cells * sizeof(Py_ssize_t));       /* a's, then b's */
    Py_ssize_t *start = PyMem_Calloc(cells + 1, sizeof(Py_ssize_t));
    Py_ssize_t *at = PyMem_Malloc(cells * sizeof(Py_ssize_t));
    Py_ssize_t *rows = PyMem_Calloc(4 * ((size_t)lb + 2), sizeof(Py_ssize_t));
    Py_ssize_t *queue = PyMem_Malloc(4 * cells * sizeof(Py_ssize_t));
    Py_ssize_t *blocks = PyMem_Malloc(3 * cells * sizeof(Py_ssize_t));
    PyObject *out = NULL, *stretches = NULL;
    if (table == NULL || ids == NULL || start == NULL || at == NULL || rows == NULL ||
        queue == NULL || blocks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t next = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *word = k < la ? PyTuple_GET_ITEM(x, k) : PyTuple_GET_ITEM(y, k - la);
        if ((ids[k] = word_id(table, slots - 1, word, &next)) < 0) goto done;
        if (k >= la) start[ids[k] + 1]++;
    }
    for (Py_ssize_t w = 0; w < next; w++) start[w + 1] += start[w];
    Py_ssize_t *fill = queue; /* each word's next free position in `at`, then the queue */
    memcpy(fill, start, (size_t)(next + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t j = 0; j < lb; j++) at[fill[ids[la + j]]++] = j;
    Runs runs = {ids, ids + la, start, at, rows, rows + (lb + 2), rows + 2 * (lb + 2),
                 rows + 3 * (lb + 2)};
    Py_ssize_t n_queue = 1, n_blocks = 0, matches = 0;
    queue[0] = 0, queue[1] = la, queue[2] = 0, queue[3] = lb;
    while (n_queue > 0) {
        Py_ssize_t *q = queue + 4 * --n_queue, alo = q[0], ahi = q[1], blo = q[2], bhi = q[3];
        Py_ssize_t best[3];
        longest_run(&runs, alo, ahi, blo, bhi, best);
        Py_ssize_t i = best[0], j = best[1], k = best[2];
        if (k == 0) continue;
        Py_ssize_t *block = blocks + 3 * n_blocks++;
        block[0] = i, block[1] = j, block[2] = k;
        matches += k;
        if (alo < i && blo < j) {
            q = queue + 4 * n_queue++;
            q[0] = alo, q[1] = i, q[2] = blo, q[3] = j;
        }
        if (i + k < ahi && j + k < bhi) {
            q = queue + 4 * n_queue++;
            q[0] = i + k, q[1] = ahi, q[2] = j + k, q[3] = bhi;
        }
    }
    qsort(blocks, (size_t)n_blocks, 3 * sizeof(Py_ssize_t), by_first);
    blocks[3 * n_blocks] = la, blocks[3 * n_blocks + 1] = lb, blocks[3 * n_blocks + 2] = 0;
    stretches = PyList_New(0);
    for (Py_ssize_t m = 0, i = 0, j = 0; stretches != NULL && m <= n_blocks; m++) {
        Py_ssize_t ai = blocks[3 * m], bj = blocks[3 * m + 1];
        if (i < ai || j < bj) {
            PyObject *stretch = Py_BuildValue("(nnnn)", i, ai, j, bj);
            if (stretch == NULL || PyList_Append(stretches, stretch) < 0) Py_CLEAR(stretches);
            Py_XDECREF(stretch);
        }
        i = ai + blocks[3 * m + 2], j = bj + blocks[3 * m + 2];
    }
    if (stretches != NULL) out = Py_BuildValue("(nN)", matches, stretches);
done:
    PyMem_Free(table);
    PyMem_Free(ids);
    PyMem_Free(start);
    PyMem_Free(at);
    PyMem_Free(rows);
    PyMem_Free(queue);
    PyMem_Free(blocks);
    Py_DECREF(x);
    Py_DECREF(y);
    return out;
}

/* The bit of a term search's 4,096-bit table for a term or text position opening with
 * the bytes `a`, `b`. */
static inline unsigned pair_key(unsigned char a, unsigned char b) {
    return ((unsigned)a << 4 ^ b) & 4095;
}

/* A set of terms made ready to be sought in many texts (`packer.records.TermSearch`):
 * the terms of one byte a character and two characters or more (nearly every term of a
 * canonical text) sought in one pass over a text of one byte a character, a term tried
 * only where a pair of bytes its first two may be stands (a 4,096-bit table), and there
 * only the terms chained under that pair; any other term is searched as `in` searches it.
 * Made once for all the texts a request searches: a polarity index's sought words (40 at
 * 10 candidates, 1,500 at 3,000) were read again for every passage (45 us a passage at
 * 3,000 candidates). */
typedef struct {
    PyObject_HEAD
    PyObject *held;     /* the terms, a tuple of str (non-str members refused) */
    Py_ssize_t m;
    char *fast;         /* m: whether term k is sought in the one pass */
    Py_ssize_t n_fast;
    uint64_t table[64]; /* the opening pairs of the fast terms */
    Py_ssize_t *head;   /* `chains` heads, -1 for none */
    Py_ssize_t *next;   /* m */
    unsigned chains;    /* a power of two, about twice the fast terms */
} TermsObject;

static inline unsigned chain_of(const TermsObject *t, unsigned key) {
    return (key ^ key >> 6) & (t->chains - 1);
}

static void terms_dealloc(TermsObject *t) {
    Py_XDECREF(t->held);
    PyMem_Free(t->fast);
    PyMem_Free(t->head);
    PyMem_Free(t->next);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *terms_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *set;
    if ((kwargs && PyDict_GET_SIZE(kwargs)) || !PyArg_UnpackTuple(args, "Terms", 1, 1, &set)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Terms(terms: set of str)");
        return NULL;
    }
    if (!PyAnySet_Check(set)) {
        PyErr_SetString(PyExc_TypeError, "Terms(terms: set of str)");
        return NULL;
    }
    TermsObject *t = (TermsObject *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    t->held = PySequence_Tuple(set);
    if (t->held == NULL) goto fail;
    t->m = PyTuple_GET_SIZE(t->held);
    for (Py_ssize_t k = 0; k < t->m; k++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(t->held, k))) {
            PyErr_SetString(PyExc_TypeError, "'in <string>' requires string as left operand");
            goto fail;
        }
    }
    t->chains = 8;
    while (t->chains < 4096 && t->chains < 2 * (unsigned)(t->m < 4096 ? t->m : 4096)) {
        t->chains *= 2;
    }
    size_t m = (size_t)(t->m ? t->m : 1);
    t->fast = PyMem_Calloc(m, 1);
    t->next = PyMem_Malloc(m * sizeof(Py_ssize_t));
    t->head = PyMem_Malloc(t->chains * sizeof(Py_ssize_t));
    if (t->fast == NULL || t->next == NULL || t->head == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (unsigned b = 0; b < t->chains; b++) t->head[b] = -1;
    for (Py_ssize_t k = 0; k < t->m; k++) {
        PyObject *term = PyTuple_GET_ITEM(t->held, k);
        if (PyUnicode_GET_LENGTH(term) >= 2 && PyUnicode_KIND(term) == PyUnicode_1BYTE_KIND) {
            const unsigned char *c = PyUnicode_1BYTE_DATA(term);
            unsigned key = pair_key(c[0], c[1]);
            t->table[key >> 6] |= (uint64_t)1 << (key & 63);
            t->fast[k] = 1;
            t->next[k] = t->head[chain_of(t, key)];
            t->head[chain_of(t, key)] = k;
            t->n_fast++;
        }
    }
    return (PyObject *)t;
fail:
    Py_DECREF(t);
    return NULL;
}

/* The terms that occur in `text`, as `in` finds them: a frozenset. */
static PyObject *found_in(TermsObject *t, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "found_in(text: str)");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int one_byte = PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND;
    char *found = PyMem_Calloc((size_t)(t->m ? t->m : 1), 1);
    PyObject *kept = NULL, *out = NULL;
    if (found == NULL) return PyErr_NoMemory();
    Py_ssize_t pending = 0;
    for (Py_ssize_t k = 0; k < t->m; k++) {
        if (one_byte && t->fast[k]) {
            found[k] = 2; /* sought in the one pass */
            pending++;
        } else {
            int in = PyUnicode_Contains(text, PyTuple_GET_ITEM(t->held, k));
            if (in < 0) goto done;
            found[k] = (char)in;
        }
    }
    const unsigned char *s = one_byte ? PyUnicode_1BYTE_DATA(text) : NULL;
    for (Py_ssize_t p = 0; pending > 0 && p + 1 < n; p++) {
        unsigned key = pair_key(s[p], s[p + 1]);
        if (!(t->table[key >> 6] >> (key & 63) & 1)) continue;
        for (Py_ssize_t k = t->head[chain_of(t, key)]; k >= 0; k = t->next[k]) {
            if (found[k] != 2) continue;
            PyObject *term = PyTuple_GET_ITEM(t->held, k);
            Py_ssize_t length = PyUnicode_GET_LENGTH(term);
            const unsigned char *c = PyUnicode_1BYTE_DATA(term);
            if (length <= n - p && c[0] == s[p] && c[1] == s[p + 1] &&
                memcmp(c, s + p, (size_t)length) == 0) {
                found[k] = 1;
                pending--;
            }
        }
    }
    kept = PyList_New(0);
    for (Py_ssize_t k = 0; kept != NULL && k < t->m; k++) {
        if (found[k] == 1 && PyList_Append(kept, PyTuple_GET_ITEM(t->held, k)) < 0) {
            Py_CLEAR(kept);
        }
    }
    if (kept != NULL) out = PyFrozenSet_New(kept);
done:
    Py_XDECREF(kept);
    PyMem_Free(found);
    return out;
}

static PyMethodDef terms_methods[] = {
    {"found_in", (PyCFunction)found_in, METH_O,
     "The terms that occur in a text, as `in` finds them: `records.TermSearch.found_in`."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TermsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "packer._native.Terms",
    .tp_basicsize = sizeof(TermsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Terms made ready to be sought in many texts: `packer.records.TermSearch`.",
    .tp_new = terms_new,
    .tp_dealloc = (destructor)terms_dealloc,
    .tp_methods = terms_methods,
};

/* `packer.records.contained`: the `terms` (a set of str) that occur in `text`, as `in` finds
 * them (`Terms(terms).found_in(text)`, for a single text). A request's question terms were
 * searched one by one, each a pass over the text (2.0 us a paragraph for six terms, 1.0
 * here). */
static PyObject *contained(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyAnySet_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "contained(terms: set of str, text: str)");
        return NULL;
    }
    PyObject *terms = PyObject_CallOneArg((PyObject *)&TermsType, args[0]);
    if (terms == NULL) return NULL;
    PyObject *out = found_in((TermsObject *)terms, args[1]);
    Py_DECREF(terms);
    return out;
}

/* `packer.typed_claims.capital_runs`: the runs of capitalized words (two code points or
 * more, the first upper case, as `str.isupper` reads one character) of a text's cased
 * canonical words, given as a list or as the cased text they are scanned from (`words`
 * above), each run as its folded `words` (a list, or the canonical form: the words joined
 * by single spaces) not in `stopwords` (none left: no run) with the index it starts at; a
 * run at index 0 needs two words; no run at all when the two differ in length. Given as
 * texts, no str is made but for a run's words. In Python a paragraph's 103 words cost
 * 16 us, and making its cased words and splitting its canonical form 14 more. */
static PyObject *capital_runs(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "capital_runs(cased, words, stopwords: set)");
        return NULL;
    }
    PyObject *joined = NULL, *words = NULL, *runs = NULL;
    PyObject **w = NULL;
    Py_ssize_t n = 0, *at = NULL; /* with `joined`: word k is joined[at[2k]:at[2k+1]] */
    char *capital = NULL;
    if (PyUnicode_Check(args[1])) {
        joined = args[1];
        Py_ssize_t length = PyUnicode_GET_LENGTH(joined);
        at = PyMem_Malloc((size_t)(2 * length + 2) * sizeof(Py_ssize_t));
        if (at == NULL) return PyErr_NoMemory();
        if (length > 0) { /* "".split(" ") is [""], but an empty form holds no word */
            Py_ssize_t from = 0;
            for (Py_ssize_t i = 0; i <= length; i++) {
                if (i == length || PyUnicode_READ_CHAR(joined, i) == ' ') {
                    at[2 * n] = from;
                    at[2 * n + 1] = i;
                    n++;
                    from = i + 1;
                }
            }
        }
    } else {
        words = PySequence_Fast(args[1], "capital_runs: words must be a sequence or a str");
        if (words == NULL) return NULL;
        n = PySequence_Fast_GET_SIZE(words);
        w = PySequence_Fast_ITEMS(words);
        for (Py_ssize_t k = 0; k < n; k++) {
            if (!PyUnicode_Check(w[k])) {
                PyErr_SetString(PyExc_TypeError, "capital_runs: the words must be str");
                goto done;
            }
        }
    }
    capital = PyMem_Malloc((size_t)(n ? n : 1));
    if (capital == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count;
    if (PyUnicode_Check(args[0])) {
        Py_UCS4 *kept;
        Py_ssize_t *starts, *ends;
        count = words_of(args[0], &kept, &starts, &ends);
        if (count < 0) goto done;
        for (Py_ssize_t k = 0; k < count && count == n; k++)
            capital[k] = ends[k] - starts[k] > 1 && Py_UNICODE_ISUPPER(kept[starts[k]]);
        PyMem_Free(kept);
        PyMem_Free(starts);
    } else {
        PyObject *cased = PySequence_Fast(args[0], "capital_runs: cased must be a sequence");
        if (cased == NULL) goto done;
        count = PySequence_Fast_GET_SIZE(cased);
        PyObject **c = PySequence_Fast_ITEMS(cased);
        for (Py_ssize_t k = 0; k < count; k++) {
            if (!PyUnicode_Check(c[k])) {
                PyErr_SetString(PyExc_TypeError, "capital_runs: the words must be str");
                Py_DECREF(cased);
                goto done;
            }
            if (count == n)
                capital[k] = PyUnicode_GET_LENGTH(c[k]) > 1 &&
                             Py_UNICODE_ISUPPER(PyUnicode_READ_CHAR(c[k], 0));
        }
        Py_DECREF(cased);
    }
    runs = PyList_New(0);
    if (runs == NULL || count != n) goto done;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t start = i;
        while (i < n && capital[i]) i++;
        if (i == start) {
            i++;
            continue;
        }
        if (i - 1 == 0) continue; /* one word opening the text */
        PyObject *named = PyList_New(0);
        if (named == NULL) {
            Py_CLEAR(runs);
            goto done;
        }
        for (Py_ssize_t k = start; k < i; k++) {
            PyObject *word = joined ? PyUnicode_Substring(joined, at[2 * k], at[2 * k + 1])
                                    : Py_NewRef(w[k]);
            int stop = word == NULL ? -1 : PySet_Contains(args[2], word);
            if (stop < 0 || (!stop && PyList_Append(named, word) < 0)) {
                Py_XDECREF(word);
                Py_DECREF(named);
                Py_CLEAR(runs);
                goto done;
            }
            Py_DECREF(word);
        }
        if (PyList_GET_SIZE(named) > 0) {
            PyObject *run = Py_BuildValue("(Nn)", PyList_AsTuple(named), start);
            if (run == NULL || PyList_Append(runs, run) < 0) {
                Py_XDECREF(run);
                Py_DECREF(named);
                Py_CLEAR(runs);
                goto done;
            }
            Py_DECREF(run);
        }
        Py_DECREF(named);
    }
done:
    PyMem_Free(capital);
    PyMem_Free(at);
    Py_XDECREF(words);
    return runs;
}

static PyMethodDef methods[] = {
    {"words", words, METH_O,
     "The canonical words of a folded text: `packer.records.scan_words`, in C."},
    {"text_words", (PyCFunction)(void (*)(void))text_words, METH_FASTCALL,
     "A folded text's canonical form, words, first words and negation: `packer.records`."},
    {"sentence_words", (PyCFunction)(void (*)(void))sentence_words, METH_FASTCALL,
     "A folded sentence's content words and negation count: `packer.statements`, in C."},
    {"split_count", split_count, METH_O, "len(text.split()), without building the list."},
    {"sentence_bounds", (PyCFunction)(void (*)(void))sentence_bounds, METH_FASTCALL,
     "Each sentence's (start, end, complete): `packer.units.sentence_bounds`, in C."},
    {"minhash", (PyCFunction)(void (*)(void))minhash, METH_FASTCALL,
     "The MinHash sketch of a text's word shingles: `packer.sketch.minhash`, in C."},
    {"sharing_pairs", (PyCFunction)(void (*)(void))sharing_pairs, METH_FASTCALL,
     "The record pairs sharing enough opening words: `packer.reprint_pairs.shared_openings`, in C."},
    {"shared_words", (PyCFunction)(void (*)(void))shared_words, METH_FASTCALL,
     "How many words two sequences share, with repeats: `packer.reprints.shared_words`."},
    {"word_postings", (PyCFunction)(void (*)(void))word_postings, METH_FASTCALL,
     "The texts holding each sought word: `packer.polarity.word_postings`, in C."},
    {"alignment", (PyCFunction)(void (*)(void))alignment, METH_FASTCALL,
     "The words two sequences share in order, and where they differ: difflib's, in C."},
    {"contained", (PyCFunction)(void (*)(void))contained, METH_FASTCALL,
     "The terms that occur in a text: `packer.records.contained`, in C."},
    {"capital_runs", (PyCFunction)(void (*)(void))capital_runs, METH_FASTCALL,
     "The runs of capitalized words: `packer.typed_claims.capital_runs`, in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "packer._native", "The per-text kernels of the canonical form.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&TermsType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "Terms", (PyObject *)&TermsType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    PyObject *symbols = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, SYMBOLS, N_SYMBOLS);
    if (symbols == NULL || PyModule_AddObject(module, "SYMBOLS", symbols) < 0) {
        Py_XDECREF(symbols);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

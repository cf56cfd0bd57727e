/* The pre-tokenizer of tiktoken's cl100k_base, in C: the pieces its split pattern
 *
 *   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
 *    ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
 *
 * finds, as a hand-written scanner over the code points (alternatives tried in order,
 * first match wins, as tiktoken's regex does). The character classes come from the
 * generated `_pretokenize_table.h`. Each piece's count comes from a memo of counts
 * (`Memo`), a piece not seen before counted by tiktoken's byte pair encoding, step for
 * step, over the encoding's own merge ranks (`Ranks`), so the count is tiktoken's
 * exactly (`tests/test_pretokenize.py` holds the two equal over fuzzed Unicode and every
 * code point). Why: the split regex was 86% of tiktoken's
 * instructions on our passages, and a piece's BPE is the same wherever it occurs.
 * Rejected: a general regex engine (PCRE2 has no `\p` tables as new as tiktoken's and
 * would be a build dependency); the same in Python (slower than tiktoken itself).
 *
 * The module is optional (setup builds it when a C compiler is present); without it
 * `packer.tokens` counts with tiktoken alone, same results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_pretokenize_table.h"

enum { OTHER = 0, LETTER = 1, NUMBER = 2, SPACE = 3, DOUBT = 4 };

/* Raised for a text holding a code point of class DOUBT: one whose class in tiktoken's
 * Unicode version is not known here (see `_pretokenize_table.py`); the caller counts
 * such a text with tiktoken itself. */
static PyObject *Doubt;

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }

static inline int class_of(Py_UCS4 c) { return CLASS_BLOCKS[CLASS_INDEX[c >> 8]][c & 0xFF]; }

static inline int class_at(const Text *t, Py_ssize_t i) { return class_of(at(t, i)); }

static inline int is_newline(Py_UCS4 c) { return c == '\r' || c == '\n'; }

/* `(?i:[sdmt]|ll|ve|re)` after an apostrophe at `i`: the end of the match, or 0. Rust's
 * case-insensitive `s` also matches U+017F LATIN SMALL LETTER LONG S. */
static Py_ssize_t contraction(const Text *t, Py_ssize_t i) {
    if (i + 1 >= t->n) return 0;
    Py_UCS4 a = at(t, i + 1) | (at(t, i + 1) < 128 ? 0x20 : 0);
    if (a == 's' || a == 'd' || a == 'm' || a == 't' || a == 0x17F) return i + 2;
    if (i + 2 >= t->n || at(t, i + 2) >= 128) return 0;
    Py_UCS4 b = at(t, i + 2) | 0x20;
    if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return i + 3;
    return 0;
}

static inline Py_ssize_t run_of(const Text *t, Py_ssize_t i, int kind) {
    while (i < t->n && class_at(t, i) == kind) i++;
    return i;
}

/* The end of the white-space piece starting at `i` (alternatives 5 to 8). */
static Py_ssize_t space_piece(const Text *t, Py_ssize_t i) {
    Py_ssize_t end = run_of(t, i, SPACE);
    if (end == t->n) return end; /* \s++$ */
    for (Py_ssize_t k = end - 1; k >= i; k--) {
        if (is_newline(at(t, k))) return k + 1; /* \s*[\r\n] */
    }
    if (end - i >= 2) return end - 1; /* \s+(?!\S) */
    return i + 1;                     /* \s */
}

/* The end of the piece starting at `i` (< n). */
static Py_ssize_t piece_end(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = at(t, i);
    int kind = class_of(c);
    if (c == '\'') {
        Py_ssize_t end = contraction(t, i);
        if (end) return end;
    }
    if (kind == LETTER) return run_of(t, i, LETTER);
    if (kind != NUMBER && !is_newline(c) && i + 1 < t->n && class_at(t, i + 1) == LETTER)
        return run_of(t, i + 1, LETTER);
    if (kind == NUMBER) {
        Py_ssize_t end = i + 1;
        while (end < t->n && end < i + 3 && class_at(t, end) == NUMBER) end++;
        return end;
    }
    Py_ssize_t start = i;
    if (c == ' ' && i + 1 < t->n && class_at(t, i + 1) == OTHER) start = i + 1;
    if (class_at(t, start) == OTHER) {
        Py_ssize_t end = run_of(t, start, OTHER);
        while (end < t->n && is_newline(at(t, end))) end++;
        return end;
    }
    return space_piece(t, i);
}

/* Reads `text` into `t`; -1 with ValueError when it holds a surrogate (tiktoken replaces
 * those before encoding, and so does the caller), -1 with `Doubt` when it holds a code
 * point of class DOUBT (no Latin-1 one is: the table's test holds it). */
static int open_text(PyObject *text, Text *t) {
    t->kind = PyUnicode_KIND(text);
    t->data = PyUnicode_DATA(text);
    t->n = PyUnicode_GET_LENGTH(text);
    if (t->kind == PyUnicode_1BYTE_KIND) return 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        if (Py_UNICODE_IS_SURROGATE(at(t, i))) {
            PyErr_SetString(PyExc_ValueError, "text holds a surrogate");
            return -1;
        }
        if (class_at(t, i) == DOUBT) {
            PyErr_Format(Doubt, "text holds U+%04X, a code point tiktoken may class otherwise",
                         (unsigned int)at(t, i));
            return -1;
        }
    }
    return 0;
}

static PyObject *pieces(PyObject *self, PyObject *text) {
    Text t;
    if (!PyUnicode_Check(text)) return PyErr_Format(PyExc_TypeError, "pieces() needs a str");
    if (open_text(text, &t) < 0) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0, end; out && i < t.n; i = end) {
        end = piece_end(&t, i);
        PyObject *piece = PyUnicode_Substring(text, i, end);
        if (!piece || PyList_Append(out, piece) < 0) Py_CLEAR(out);
        Py_XDECREF(piece);
    }
    return out;
}

/* The memo of piece counts: an open-addressing table keyed by a piece's code points, so
 * that looking a piece up builds no str (a str per piece and a dict lookup were two thirds
 * of a count with every piece known). Keys are stored as UCS-4, so a piece found in a
 * Latin-1 text and in a wider one is one entry. Rejected: a dict keyed by str (that
 * allocation per piece), and a dict keyed by the piece's hash alone (two pieces of one
 * hash would share a count). */
typedef struct {
    uint64_t hash; /* 0: empty slot */
    Py_UCS4 *key;
    Py_ssize_t len;
    long long count;
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *slots;
    Py_ssize_t capacity; /* a power of two */
    Py_ssize_t used;
} Memo;

static uint64_t hash_of(const Text *t, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the code points */
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)at(t, i);
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

/* The slot holding the piece t[start:end] (hash `h`), or the empty slot where it goes. */
static Entry *slot_of(const Memo *m, const Text *t, Py_ssize_t start, Py_ssize_t end, uint64_t h) {
    size_t mask = (size_t)m->capacity - 1;
    for (size_t k = (size_t)h & mask;; k = (k + 1) & mask) {
        Entry *e = &m->slots[k];
        if (e->hash == 0) return e;
        if (e->hash == h && e->len == end - start) {
            Py_ssize_t i = 0;
            while (i < e->len && e->key[i] == at(t, start + i)) i++;
            if (i == e->len) return e;
        }
    }
}

static void free_slots(Entry *slots, Py_ssize_t capacity) {
    for (Py_ssize_t k = 0; k < capacity; k++) PyMem_Free(slots[k].key);
    PyMem_Free(slots);
}

static int make_room(Memo *m) {
    if (m->slots && 2 * (m->used + 1) <= m->capacity) return 0;
    Py_ssize_t capacity = m->capacity ? 2 * m->capacity : 1024;
    Entry *slots = PyMem_Calloc((size_t)capacity, sizeof(Entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < m->capacity; k++) {
        Entry e = m->slots[k];
        if (e.hash == 0) continue;
        size_t mask = (size_t)capacity - 1, j = (size_t)e.hash & mask;
        while (slots[j].hash != 0) j = (j + 1) & mask;
        slots[j] = e;
    }
    PyMem_Free(m->slots);
    m->slots = slots;
    m->capacity = capacity;
    return 0;
}

/* Remembers the count `n` of the piece t[start:end] in the empty slot `e` found for it
 * (hash `h`); -1 on error. */
static int remember(Memo *m, Entry *e, const Text *t, Py_ssize_t start, Py_ssize_t end,
                    uint64_t h, long long n) {
    Py_UCS4 *key = PyMem_Malloc((size_t)(end > start ? end - start : 1) * sizeof(Py_UCS4));
    if (key == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = start; i < end; i++) key[i - start] = at(t, i);
    *e = (Entry){h, key, end - start, n};
    m->used++;
    return 0;
}

static PyObject *memo_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        return PyErr_Format(PyExc_TypeError, "Memo() takes no arguments");
    }
    Memo *m = (Memo *)type->tp_alloc(type, 0);
    if (m && make_room(m) < 0) Py_CLEAR(m);
    return (PyObject *)m;
}

static void memo_dealloc(Memo *m) {
    free_slots(m->slots, m->capacity);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static Py_ssize_t memo_len(Memo *m) { return m->used; }

/* memo.clear(): forgets every piece */
static PyObject *memo_clear(Memo *m, PyObject *unused) {
    free_slots(m->slots, m->capacity);
    m->slots = NULL;
    m->capacity = m->used = 0;
    if (make_room(m) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef memo_methods[] = {
    {"clear", (PyCFunction)memo_clear, METH_NOARGS, "Forget every piece."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods memo_sequence = {.sq_length = (lenfunc)memo_len};

static PyTypeObject MemoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "packer._pretokenize.Memo",
    .tp_basicsize = sizeof(Memo),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counts of pieces, keyed by the pieces' code points.",
    .tp_new = memo_new,
    .tp_dealloc = (destructor)memo_dealloc,
    .tp_as_sequence = &memo_sequence,
    .tp_methods = memo_methods,
};

/* The merge ranks of the encoding (`tiktoken.Encoding._mergeable_ranks`, token bytes to
 * rank), as an open-addressing table over byte strings held in one arena: a new piece's
 * BPE runs here, without a Python call, a bytes object and a list of ids for each (about
 * 1 us a new piece, ten of them in a new paragraph). */
typedef struct {
    uint64_t hash; /* 0: empty slot */
    Py_ssize_t at; /* offset in the arena */
    uint32_t len;
    uint32_t rank;
} RankEntry;

typedef struct {
    PyObject_HEAD
    RankEntry *slots;
    size_t mask;
    unsigned char *arena;
} Ranks;

static uint64_t hash_bytes(const unsigned char *p, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

/* The rank of the bytes p[0:len], or UINT32_MAX when they are no token. */
static uint32_t rank_of(const Ranks *r, const unsigned char *p, size_t len) {
    uint64_t h = hash_bytes(p, len);
    for (size_t k = (size_t)h & r->mask;; k = (k + 1) & r->mask) {
        const RankEntry *e = &r->slots[k];
        if (e->hash == 0) return UINT32_MAX;
        if (e->hash == h && e->len == len && memcmp(r->arena + e->at, p, len) == 0) {
            return e->rank;
        }
    }
}

static PyObject *ranks_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *ranks;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        return PyErr_Format(PyExc_TypeError, "Ranks() takes no keyword arguments");
    }
    if (!PyArg_ParseTuple(args, "O!:Ranks", &PyDict_Type, &ranks)) return NULL;
    Ranks *r = (Ranks *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    size_t capacity = 1024, total = 0;
    while (capacity < 2 * (size_t)PyDict_GET_SIZE(ranks)) capacity *= 2;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(ranks, &pos, &key, &value)) {
        if (!PyBytes_Check(key) || !PyLong_Check(value)) {
            Py_DECREF(r);
            return PyErr_Format(PyExc_TypeError, "Ranks() needs a dict of bytes to int");
        }
        total += (size_t)PyBytes_GET_SIZE(key);
    }
    r->slots = PyMem_Calloc(capacity, sizeof(RankEntry));
    r->arena = PyMem_Malloc(total ? total : 1);
    r->mask = capacity - 1;
    if (r->slots == NULL || r->arena == NULL) {
        Py_DECREF(r);
        return PyErr_NoMemory();
    }
    Py_ssize_t at = 0;
    pos = 0;
    while (PyDict_Next(ranks, &pos, &key, &value)) {
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(key);
        size_t len = (size_t)PyBytes_GET_SIZE(key);
        long rank = PyLong_AsLong(value);
        if (rank < 0 || rank >= (long)UINT32_MAX) {
            Py_DECREF(r);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a rank out of range");
            return NULL;
        }
        uint64_t h = hash_bytes(p, len);
        size_t k = (size_t)h & r->mask;
        while (r->slots[k].hash != 0) k = (k + 1) & r->mask;
        memcpy(r->arena + at, p, len);
        r->slots[k] = (RankEntry){h, at, (uint32_t)len, (uint32_t)rank};
        at += (Py_ssize_t)len;
    }
    return (PyObject *)r;
}

static void ranks_dealloc(Ranks *r) {
    PyMem_Free(r->slots);
    PyMem_Free(r->arena);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyTypeObject RanksType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "packer._pretokenize.Ranks",
    .tp_basicsize = sizeof(Ranks),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An encoding's merge ranks (token bytes to rank), for byte pair encoding in C.",
    .tp_new = ranks_new,
    .tp_dealloc = (destructor)ranks_dealloc,
};

/* The rank of the bytes from part i to part i + 3 (tiktoken's `get_rank`), or none. */
static uint32_t joined_rank(const Ranks *r, const unsigned char *p, const size_t *start,
                            const size_t n_parts, size_t i) {
    if (i + 3 >= n_parts) return UINT32_MAX;
    return rank_of(r, p + start[i], start[i + 3] - start[i]);
}

/* How many tokens tiktoken's byte pair encoding makes of the bytes p[0:len] (len >= 1):
 * its `byte_pair_encode`, step for step (a token itself is one; else the adjacent pair of
 * lowest rank merges first, the leftmost of equal ranks, until no pair is a token), with
 * parts' starts and ranks in `start` and `rank` (room for len + 1 each). */
static Py_ssize_t bpe_count(const Ranks *r, const unsigned char *p, size_t len, size_t *start,
                            uint32_t *rank) {
    if (rank_of(r, p, len) != UINT32_MAX) return 1;
    size_t n = 0, best = SIZE_MAX;
    uint32_t low = UINT32_MAX;
    for (size_t i = 0; i + 1 < len; i++) {
        uint32_t k = rank_of(r, p + i, 2);
        if (k < low) low = k, best = i;
        start[n] = i, rank[n++] = k;
    }
    start[n] = len - 1, rank[n++] = UINT32_MAX;
    start[n] = len, rank[n++] = UINT32_MAX;
    while (low != UINT32_MAX) {
        size_t i = best;
        if (i > 0) rank[i - 1] = joined_rank(r, p, start, n, i - 1);
        rank[i] = joined_rank(r, p, start, n, i);
        memmove(start + i + 1, start + i + 2, (n - i - 2) * sizeof(size_t));
        memmove(rank + i + 1, rank + i + 2, (n - i - 2) * sizeof(uint32_t));
        n--;
        low = UINT32_MAX, best = SIZE_MAX;
        for (size_t k = 0; k + 1 < n; k++) {
            if (rank[k] < low) low = rank[k], best = k;
        }
    }
    return (Py_ssize_t)(n - 1);
}

/* The UTF-8 bytes of t[start:end] into `out` (room for 4 a code point); their length. */
static size_t utf8_of(const Text *t, Py_ssize_t start, Py_ssize_t end, unsigned char *out) {
    size_t m = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = at(t, i);
        if (c < 0x80) {
            out[m++] = (unsigned char)c;
        } else if (c < 0x800) {
            out[m++] = (unsigned char)(0xC0 | (c >> 6));
            out[m++] = (unsigned char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[m++] = (unsigned char)(0xE0 | (c >> 12));
            out[m++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            out[m++] = (unsigned char)(0x80 | (c & 0x3F));
        } else {
            out[m++] = (unsigned char)(0xF0 | (c >> 18));
            out[m++] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
            out[m++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            out[m++] = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    return m;
}

/* count(text, memo, ranks) -> the sum of the counts of the pieces of `text`: the memo's
 * for a piece it holds, else its byte pair encoding's (`bpe_count`), which the memo then
 * keeps. The whole count in one call: a new piece costs no Python object. */
static PyObject *count(PyObject *self, PyObject *args) {
    PyObject *text;
    Memo *memo;
    Ranks *ranks;
    Text t;
    if (!PyArg_ParseTuple(args, "UO!O!:count", &text, &MemoType, &memo, &RanksType, &ranks)) {
        return NULL;
    }
    if (open_text(text, &t) < 0) return NULL;
    /* scratch for the longest possible piece: its UTF-8, its parts' starts and ranks */
    size_t room = 4 * (size_t)t.n + 2;
    unsigned char *utf8 = NULL;
    size_t *start = NULL;
    uint32_t *rank = NULL;
    long long total = 0;
    for (Py_ssize_t i = 0, end; i < t.n; i = end) {
        end = piece_end(&t, i);
        uint64_t h = hash_of(&t, i, end);
        Entry *e = make_room(memo) < 0 ? NULL : slot_of(memo, &t, i, end, h);
        if (e != NULL && e->hash != 0) {
            total += e->count;
            continue;
        }
        if (e != NULL && utf8 == NULL) {
            utf8 = PyMem_Malloc(room);
            start = PyMem_Malloc(room * sizeof(size_t));
            rank = PyMem_Malloc(room * sizeof(uint32_t));
            if (utf8 == NULL || start == NULL || rank == NULL) e = NULL, PyErr_NoMemory();
        }
        if (e == NULL) {
            total = -1;
            break;
        }
        Py_ssize_t n = bpe_count(ranks, utf8, utf8_of(&t, i, end, utf8), start, rank);
        if (remember(memo, e, &t, i, end, h, n) < 0) {
            total = -1;
            break;
        }
        total += n;
    }
    PyMem_Free(utf8);
    PyMem_Free(start);
    PyMem_Free(rank);
    return total < 0 ? NULL : PyLong_FromLongLong(total);
}

static PyMethodDef methods[] = {
    {"pieces", pieces, METH_O, "The pieces cl100k_base's split pattern cuts `text` into."},
    {"count", count, METH_VARARGS,
     "The text's count: each piece's from the memo, else its byte pair encoding's, kept."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "packer._pretokenize", "cl100k_base's pre-tokenizer in C.", -1,
    methods,
};

/* The split pattern scanned here, exactly as tiktoken writes it: `packer.tokens` uses this
 * module only for an encoding whose pattern is this text. */
static const char PATTERN[] =
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+|"
    " ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

PyMODINIT_FUNC PyInit__pretokenize(void) {
    if (PyType_Ready(&MemoType) < 0 || PyType_Ready(&RanksType) < 0) return NULL;
    if (Doubt == NULL) Doubt = PyErr_NewException("packer._pretokenize.Doubt", NULL, NULL);
    if (Doubt == NULL) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module && PyModule_AddStringConstant(module, "PATTERN", PATTERN) < 0) Py_CLEAR(module);
    if (module && PyModule_AddObjectRef(module, "Memo", (PyObject *)&MemoType) < 0) Py_CLEAR(module);
    if (module && PyModule_AddObjectRef(module, "Ranks", (PyObject *)&RanksType) < 0) Py_CLEAR(module);
    if (module && PyModule_AddObjectRef(module, "Doubt", Doubt) < 0) Py_CLEAR(module);
    return module;
}

/* The pre-tokenizer of tiktoken's cl100k_base, in C: the pieces its split pattern
 *
 *   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
 *    ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
 *
 * finds, as a hand-written scanner over the code points (alternatives tried in order,
 * first match wins, as tiktoken's regex does). The character classes come from the
 * generated `_pretokenize_table.h`. `packer.tokens` looks each piece up in a memo of
 * counts and has tiktoken's own BPE encode the pieces it has not seen, so the count is
 * tiktoken's exactly (`tests/test_pretokenize.py` holds the two equal over fuzzed
 * Unicode and every code point). Why: the split regex was 86% of tiktoken's
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

#include "_pretokenize_table.h"

enum { OTHER = 0, LETTER = 1, NUMBER = 2, SPACE = 3 };

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
 * those before encoding, and so does the caller). */
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

/* count(text, memo, encode) -> the sum of the counts of the pieces of `text`: the memo's
 * for a piece it holds, else len(encode(the piece's UTF-8)), which the memo then keeps.
 * The whole count in one call: the pieces a new text brings no longer cross into Python
 * one by one (a list of them, a lookup and a store each). */
static PyObject *count(PyObject *self, PyObject *args) {
    PyObject *text, *encode;
    Memo *memo;
    Text t;
    if (!PyArg_ParseTuple(args, "UO!O:count", &text, &MemoType, &memo, &encode)) return NULL;
    if (open_text(text, &t) < 0) return NULL;
    long long total = 0;
    for (Py_ssize_t i = 0, end; i < t.n; i = end) {
        end = piece_end(&t, i);
        uint64_t h = hash_of(&t, i, end);
        if (make_room(memo) < 0) return NULL; /* room for this piece, before its slot */
        Entry *e = slot_of(memo, &t, i, end, h);
        if (e->hash != 0) {
            total += e->count;
            continue;
        }
        PyObject *piece = PyUnicode_Substring(text, i, end);
        PyObject *utf8 = piece ? PyUnicode_AsUTF8String(piece) : NULL;
        PyObject *ids = utf8 ? PyObject_CallOneArg(encode, utf8) : NULL;
        Py_ssize_t n = ids ? PyObject_Length(ids) : -1;
        Py_XDECREF(piece);
        Py_XDECREF(utf8);
        Py_XDECREF(ids);
        if (n < 0) return NULL;
        if (remember(memo, e, &t, i, end, h, n) < 0) return NULL;
        total += n;
    }
    return PyLong_FromLongLong(total);
}

static PyMethodDef methods[] = {
    {"pieces", pieces, METH_O, "The pieces cl100k_base's split pattern cuts `text` into."},
    {"count", count, METH_VARARGS,
     "The text's count: each piece's from the memo, else len(encode(piece)), remembered."},
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
    if (PyType_Ready(&MemoType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module && PyModule_AddStringConstant(module, "PATTERN", PATTERN) < 0) Py_CLEAR(module);
    if (module && PyModule_AddObjectRef(module, "Memo", (PyObject *)&MemoType) < 0) Py_CLEAR(module);
    return module;
}

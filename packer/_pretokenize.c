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

/* count(text, memo) -> (sum of the memo's counts of the pieces it holds, [the others]) */
static PyObject *count(PyObject *self, PyObject *args) {
    PyObject *text, *memo;
    Text t;
    if (!PyArg_ParseTuple(args, "UO!:count", &text, &PyDict_Type, &memo)) return NULL;
    if (open_text(text, &t) < 0) return NULL;
    PyObject *missing = PyList_New(0);
    long long total = 0;
    for (Py_ssize_t i = 0, end; missing && i < t.n; i = end) {
        end = piece_end(&t, i);
        PyObject *piece = PyUnicode_Substring(text, i, end);
        PyObject *known = piece ? PyDict_GetItemWithError(memo, piece) : NULL;
        if (known) {
            total += PyLong_AsLongLong(known);
        } else if (!piece || PyErr_Occurred() || PyList_Append(missing, piece) < 0) {
            Py_CLEAR(missing);
        }
        Py_XDECREF(piece);
    }
    if (!missing) return NULL;
    return Py_BuildValue("(LN)", total, missing);
}

static PyMethodDef methods[] = {
    {"pieces", pieces, METH_O, "The pieces cl100k_base's split pattern cuts `text` into."},
    {"count", count, METH_VARARGS,
     "(sum of memo[piece] over the pieces in memo, [pieces not in memo])"},
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
    PyObject *module = PyModule_Create(&module_def);
    if (module && PyModule_AddStringConstant(module, "PATTERN", PATTERN) < 0) Py_CLEAR(module);
    return module;
}

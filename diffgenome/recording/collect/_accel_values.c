/*
 * The value paths of the compiled core: values.summarize for the scalars whose summaries it
 * keeps itself, and BoundedValues.add_pair with its overflow fingerprint.
 *
 * #included by _accel.c (see _accel.h). tests/unit/test_core_values.py compares every path
 * here with values.py on generated values.
 */
#include "_accel.h"

/* Whether ``value`` may hold a name that ``tempfile`` made while recording: some window of
 * name_length characters whose hash (stable.name_hash: h = h * name_base + ch, modulo
 * 2**name_bits) has its bit set in stable.py's bitmap. A false positive only sends the text to
 * Python, which rewrites exactly the names it knows; there are no false negatives, so both
 * cores agree. */
static int
may_hold_tempfile_name(Core *self, PyObject *value)
{
    if (PySet_GET_SIZE(self->tempfile_names) == 0) {
        return 0;
    }
    const Py_ssize_t length = self->name_length;
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    if (n < length) {
        return 0;
    }
    const unsigned char *bits = (const unsigned char *)PyByteArray_AS_STRING(self->tempfile_name_bits);
    Py_ssize_t nbits = PyByteArray_GET_SIZE(self->tempfile_name_bits) * 8;
    if (nbits != ((Py_ssize_t)1 << self->name_bits)) {
        return 1;  /* the bitmap was resized behind the core's back: let Python decide */
    }
    const uint32_t base = self->name_base;
    const uint32_t mask = (1u << self->name_bits) - 1u;
    int kind = PyUnicode_KIND(value);
    const void *data = PyUnicode_DATA(value);
    /* Arithmetic modulo 2**32 agrees with Python's modulo 2**name_bits in the low bits. */
    uint32_t h = 0, top = 1;
    for (Py_ssize_t i = 0; i < length - 1; i++) {
        top *= base;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t ch = (uint32_t)PyUnicode_READ(kind, data, i);
        if (i >= length) {
            h -= (uint32_t)PyUnicode_READ(kind, data, i - length) * top;
        }
        h = h * base + ch;
        if (i >= length - 1) {
            uint32_t slot = h & mask;
            if (bits[slot >> 3] & (1u << (slot & 7u))) {
                return 1;
            }
        }
    }
    return 0;
}

/* ``(shape(value), canonical(value))`` of an exact int in (-small_int, small_int) or an exact
 * str of fewer than short_str characters, byte for byte as values.py writes them (``i<hex>;``
 * and ``s<len>:<utf-8>``). These forms are the one thing the core writes without being told
 * how: contract.core_disagreement compares them with values.py when the core is built, and a
 * core that disagrees is not used. A str holding one of stable.markers() or a known tempfile
 * name is the Python function's (it is made stable there before digesting). */
static PyObject *
scalar_summary(Core *self, PyObject *value, int is_int)
{
    if (is_int) {
        long number = PyLong_AsLong(value);
        if (number == -1 && PyErr_Occurred()) {
            return NULL;
        }
        char text[32];
        int n = number < 0 ? snprintf(text, sizeof text, "i-%lx;", -number)
                           : snprintf(text, sizeof text, "i%lx;", number);
        PyObject *form = PyBytes_FromStringAndSize(text, n);
        if (form == NULL) {
            return NULL;
        }
        PyObject *summary = PyTuple_Pack(2, self->str_int, form);
        Py_DECREF(form);
        return summary;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->str_markers); i++) {
        int marked = PyUnicode_Contains(value, PyTuple_GET_ITEM(self->str_markers, i));
        if (marked < 0) {
            return NULL;
        }
        if (marked) {
            return PyObject_CallOneArg(self->summarize, value);
        }
    }
    if (may_hold_tempfile_name(self, value)) {
        return PyObject_CallOneArg(self->summarize, value);
    }
    PyObject *raw = PyUnicode_AsEncodedString(value, "utf-8", "surrogatepass");
    if (raw == NULL) {
        return NULL;
    }
    char head[32];
    int n = snprintf(head, sizeof head, "s%zd:", PyBytes_GET_SIZE(raw));
    PyObject *form = PyBytes_FromStringAndSize(NULL, n + PyBytes_GET_SIZE(raw));
    if (form == NULL) {
        Py_DECREF(raw);
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(form), head, n);
    memcpy(PyBytes_AS_STRING(form) + n, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
    Py_DECREF(raw);
    PyObject *summary = PyTuple_Pack(2, self->str_str, form);
    Py_DECREF(form);
    return summary;
}

static PyObject *walked_summary(Core *self, PyObject *value);

static void
forget_plain(Core *self)
{
    if (!self->classes_filled) {
        return;
    }
    self->classes_filled = 0;
    for (int i = 0; i < PLAIN_CACHE_SIZE; i++) {
        Py_CLEAR(self->classes[i].type);
        Py_CLEAR(self->classes[i].summary);
        Py_CLEAR(self->classes[i].bucket);
        Py_CLEAR(self->classes[i].dict_descr);
    }
}

/* The core's entry for ``kind``, made empty when another class held its place. */
static int
class_entry(Core *self, PyTypeObject *kind)
{
    PyObject *epoch = PyList_GET_SIZE(self->class_epoch) ? PyList_GET_ITEM(self->class_epoch, 0)
                                                         : NULL;
    if (epoch != self->plain_epoch) {
        forget_plain(self);
        Py_XSETREF(self->plain_epoch, Py_XNewRef(epoch));
    }
    int index = (int)((((size_t)kind >> 4) ^ ((size_t)kind >> 12)) & (PLAIN_CACHE_SIZE - 1));
    self->classes_filled = 1;  /* the caller may fill this entry */
    if (self->classes[index].type != (PyObject *)kind) {
        Py_CLEAR(self->classes[index].summary);
        Py_CLEAR(self->classes[index].bucket);
        Py_CLEAR(self->classes[index].dict_descr);
        Py_XSETREF(self->classes[index].type, Py_NewRef((PyObject *)kind));
    }
    return index;
}

/* Borrowed second item of ``memo[id(kind)]`` when its first is ``kind``, else NULL (with an
 * error only on failure). */
static PyObject *
memo_entry(PyObject *memo, PyTypeObject *kind)
{
    PyObject *key = PyLong_FromVoidPtr(kind);
    if (key == NULL) {
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(memo, key);
    Py_DECREF(key);
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2 ||
        PyTuple_GET_ITEM(entry, 0) != (PyObject *)kind) {
        return NULL;
    }
    return PyTuple_GET_ITEM(entry, 1);
}

/* Borrowed summary of every instance of ``kind`` when values._PLAIN_SUMMARY holds one (the
 * phase's memo of plain classes; an entry never changes until the memo is reset), else NULL
 * (with an error only on failure). Answered from the core's copy; ``ask`` also reads the
 * Python memo itself on a miss (which costs an int for the key). */
static PyObject *
plain_summary(Core *self, PyTypeObject *kind, int ask)
{
    int index = class_entry(self, kind);
    if (self->classes[index].summary != NULL || !ask) {
        return self->classes[index].summary;
    }
    PyObject *summary = memo_entry(self->plain_summaries, kind);
    if (summary == NULL || !PyTuple_CheckExact(summary) || PyTuple_GET_SIZE(summary) != 2 ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(summary, 0)) ||
        PyTuple_GET_ITEM(summary, 1) != Py_None) {
        return NULL;
    }
    self->classes[index].summary = Py_NewRef(summary);
    return summary;
}

/* Whether instances of ``kind`` can never be in the memo of plain classes (values._BUILTIN_IDS
 * and the other builtin classes summarize sees most). */
static int
never_plain(PyTypeObject *kind)
{
    return kind == &PyLong_Type || kind == &PyUnicode_Type || kind == &PyBool_Type ||
           kind == &PyFloat_Type || kind == &PyTuple_Type || kind == &PyList_Type ||
           kind == &PyDict_Type || kind == &PySet_Type || kind == &PyFrozenSet_Type ||
           kind == &PyBytes_Type || kind == &PyByteArray_Type || kind == &PyComplex_Type ||
           kind == Py_TYPE(Py_None);
}

/* values.summarize. Exact small ints, short strs and bools have summaries that never change
 * (the Python function caches them too): the first one of each value is the Python function's,
 * kept here by value in per-type tables (by type, so that 1 and True stay apart). Everything
 * else is the Python function's every time. */
static PyObject *
summarize(Core *self, PyObject *value)
{
    PyTypeObject *kind = Py_TYPE(value);
    PyObject *table = NULL;
    if (kind == &PyLong_Type) {
        int overflow = 0;
        long number = PyLong_AsLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (!overflow && number > -self->small_int && number < self->small_int) {
            table = self->int_summaries;
        }
    }
    else if (kind == &PyUnicode_Type) {
        if (PyUnicode_GET_LENGTH(value) < self->short_str) {
            table = self->str_summaries;
        }
    }
    else if (kind == &PyBool_Type) {
        int index = value == Py_True;
        if (self->bool_summaries[index] == NULL) {
            self->bool_summaries[index] = PyObject_CallOneArg(self->summarize, value);
        }
        return Py_XNewRef(self->bool_summaries[index]);
    }
    else if (value == Py_None) {
        return Py_NewRef(self->none_summary);
    }
    if (table == NULL) {
        if (never_plain(kind)) {
            PyObject *walked = walked_summary(self, value);
            if (walked != NULL || PyErr_Occurred()) {
                return walked;
            }
            return PyObject_CallOneArg(self->summarize, value);
        }
        PyObject *plain = plain_summary(self, kind, 1);
        if (plain != NULL) {
            return Py_NewRef(plain);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
        PyObject *summary = PyObject_CallOneArg(self->summarize, value);
        /* The call may have made the memo's entry for this class: keep a copy. */
        if (summary != NULL && PyTuple_CheckExact(summary) && PyTuple_GET_SIZE(summary) == 2 &&
            PyTuple_GET_ITEM(summary, 1) == Py_None && plain_summary(self, kind, 1) == NULL &&
            PyErr_Occurred()) {
            Py_CLEAR(summary);
        }
        return summary;
    }
    PyObject *known = PyDict_GetItemWithError(table, value);
    if (known != NULL) {
        return Py_NewRef(known);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *summary = scalar_summary(self, value, table == self->int_summaries);
    if (summary != NULL) {
        if (PyDict_GET_SIZE(table) >= SUMMARY_CACHE_LIMIT) {
            PyDict_Clear(table);
        }
        if (PyDict_SetItem(table, value, summary) < 0) {
            Py_CLEAR(summary);
        }
    }
    return summary;
}

/* ---- BLAKE2b, unkeyed, 8-byte digest (RFC 7693) -------------------------------------------
 *
 * The overflow fingerprint adds the first 8 bytes of BLAKE2b(tag + form) for every value past
 * a bounded set's limit; a parser's hot loop pays it on nearly every call. Through hashlib it
 * costs an argument tuple, a hasher object, a digest bytes object and two calls; here it is
 * a few hundred cycles on the stack, reading the tag and the form in place. setup() checks it
 * against hashlib.blake2b on inputs around the block size before the core is used. */

static const uint64_t b2_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t b2_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

typedef struct {
    uint64_t h[8];
    uint64_t t;          /* bytes compressed so far (inputs here stay far below 2**64) */
    uint8_t buf[128];
    size_t buflen;
} Blake2b;

static inline uint64_t
b2_rotr(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

#define B2_G(a, b, c, d, x, y)                 \
    do {                                       \
        v[a] = v[a] + v[b] + (x);              \
        v[d] = b2_rotr(v[d] ^ v[a], 32);       \
        v[c] = v[c] + v[d];                    \
        v[b] = b2_rotr(v[b] ^ v[c], 24);       \
        v[a] = v[a] + v[b] + (y);              \
        v[d] = b2_rotr(v[d] ^ v[a], 16);       \
        v[c] = v[c] + v[d];                    \
        v[b] = b2_rotr(v[b] ^ v[c], 63);       \
    } while (0)

static void
b2_compress(Blake2b *s, int last)
{
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) {
        const uint8_t *p = s->buf + 8 * i;
        m[i] = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
               (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    }
    for (int i = 0; i < 8; i++) {
        v[i] = s->h[i];
        v[i + 8] = b2_iv[i];
    }
    v[12] ^= s->t;
    if (last) {
        v[14] = ~v[14];
    }
    for (int r = 0; r < 12; r++) {
        const uint8_t *z = b2_sigma[r];
        B2_G(0, 4, 8, 12, m[z[0]], m[z[1]]);
        B2_G(1, 5, 9, 13, m[z[2]], m[z[3]]);
        B2_G(2, 6, 10, 14, m[z[4]], m[z[5]]);
        B2_G(3, 7, 11, 15, m[z[6]], m[z[7]]);
        B2_G(0, 5, 10, 15, m[z[8]], m[z[9]]);
        B2_G(1, 6, 11, 12, m[z[10]], m[z[11]]);
        B2_G(2, 7, 8, 13, m[z[12]], m[z[13]]);
        B2_G(3, 4, 9, 14, m[z[14]], m[z[15]]);
    }
    for (int i = 0; i < 8; i++) {
        s->h[i] ^= v[i] ^ v[i + 8];
    }
}

#undef B2_G

static void
b2_init8(Blake2b *s)
{
    memcpy(s->h, b2_iv, sizeof(s->h));
    s->h[0] ^= 0x01010000ULL ^ 8;  /* depth 1, fanout 1, no key, 8-byte digest */
    s->t = 0;
    s->buflen = 0;
}

/* The last block is kept until b2_final: it is compressed with the final flag. */
static void
b2_update(Blake2b *s, const uint8_t *data, size_t n)
{
    while (n > 0) {
        if (s->buflen == sizeof(s->buf)) {
            s->t += sizeof(s->buf);
            b2_compress(s, 0);
            s->buflen = 0;
        }
        size_t take = sizeof(s->buf) - s->buflen;
        if (take > n) {
            take = n;
        }
        memcpy(s->buf + s->buflen, data, take);
        s->buflen += take;
        data += take;
        n -= take;
    }
}

/* The 8-byte digest read big-endian, as int.from_bytes(digest) reads it. */
static uint64_t
b2_final8(Blake2b *s)
{
    s->t += s->buflen;
    memset(s->buf + s->buflen, 0, sizeof(s->buf) - s->buflen);
    b2_compress(s, 1);
    uint64_t h = s->h[0], out = 0;
    for (int i = 0; i < 8; i++) {  /* the digest is h[0]'s bytes, little-endian */
        out = (out << 8) | ((h >> (8 * i)) & 0xff);
    }
    return out;
}

/* values.overflow_hash for tagged forms of at most OVERFLOW_SHORT_BYTES: a polynomial over
 * the Mersenne prime 2**61 - 1 at OVERFLOW_POINT (7-byte big-endian chunks, then the length),
 * then MurmurHash3's fmix64. Longer forms take BLAKE2b. */
#define OVERFLOW_SHORT_BYTES 64
#define OVERFLOW_POINT 0x2104CA6DFF5A858ULL
#define P61 ((1ULL << 61) - 1)

/* a * b mod 2**61 - 1, for a, b < 2**61. */
static inline uint64_t
mulmod61(uint64_t a, uint64_t b)
{
#if defined(__SIZEOF_INT128__)
    unsigned __int128 product = (unsigned __int128)a * b;
    uint64_t lo = (uint64_t)product, hi = (uint64_t)(product >> 64);
#else
    uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32, b_lo = b & 0xffffffffULL, b_hi = b >> 32;
    uint64_t low = a_lo * b_lo, mid1 = a_hi * b_lo, mid2 = a_lo * b_hi;
    uint64_t carry = ((low >> 32) + (mid1 & 0xffffffffULL) + (mid2 & 0xffffffffULL)) >> 32;
    uint64_t lo = low + (mid1 << 32) + (mid2 << 32);
    uint64_t hi = a_hi * b_hi + (mid1 >> 32) + (mid2 >> 32) + carry;
#endif
    /* product = hi * 2**64 + lo < 2**122, and 2**61 = 1 modulo the prime */
    uint64_t r = (lo & P61) + (lo >> 61) + (hi << 3);
    r = (r & P61) + (r >> 61);
    return r >= P61 ? r - P61 : r;
}

static uint64_t
short_hash(const uint8_t *data, Py_ssize_t size)
{
    uint64_t h = 0;
    for (Py_ssize_t start = 0; start < size; start += 7) {
        Py_ssize_t end = start + 7 < size ? start + 7 : size;
        uint64_t chunk = 0;
        for (Py_ssize_t i = start; i < end; i++) {
            chunk = (chunk << 8) | data[i];
        }
        h = mulmod61(h, OVERFLOW_POINT) + chunk;  /* < 2**61 + 2**56: one subtraction */
        if (h >= P61) {
            h -= P61;
        }
    }
    h = mulmod61(h, OVERFLOW_POINT) + (uint64_t)size;
    if (h >= P61) {
        h -= P61;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t
overflow_hash(const char *tag, Py_ssize_t tag_size, const char *body, Py_ssize_t body_size)
{
    if (tag_size + body_size <= OVERFLOW_SHORT_BYTES) {
        uint8_t data[OVERFLOW_SHORT_BYTES];
        memcpy(data, tag, tag_size);
        memcpy(data + tag_size, body, body_size);
        return short_hash(data, tag_size + body_size);
    }
    Blake2b state;
    b2_init8(&state);
    b2_update(&state, (const uint8_t *)tag, (size_t)tag_size);
    b2_update(&state, (const uint8_t *)body, (size_t)body_size);
    return b2_final8(&state);
}

/* Whether overflow_hash agrees with hashlib.blake2b(data, digest_size=8) on inputs around
 * the block size; 0 with an exception set when it does not (the core is then not used). */
static int
overflow_hash_agrees(Core *self)
{
    static const Py_ssize_t sizes[] = {0, 1, 7, 127, 128, 129, 255, 256, 257, 1000};
    char data[1000];
    for (int i = 0; i < 1000; i++) {
        data[i] = (char)((i * 131 + 7) & 0xff);
    }
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        Py_ssize_t n = sizes[k];
        PyObject *bytes = PyBytes_FromStringAndSize(data, n);
        if (bytes == NULL) {
            return 0;
        }
        PyObject *args = PyTuple_Pack(1, bytes);
        Py_DECREF(bytes);
        if (args == NULL) {
            return 0;
        }
        PyObject *hasher = PyObject_Call(self->blake2b, args, self->blake2b_kwargs);
        Py_DECREF(args);
        if (hasher == NULL) {
            return 0;
        }
        PyObject *digest = PyObject_CallMethodNoArgs(hasher, self->str_digest);
        Py_DECREF(hasher);
        if (digest == NULL) {
            return 0;
        }
        int ok = PyBytes_Check(digest) && PyBytes_GET_SIZE(digest) == 8;
        uint64_t expected = 0;
        for (int i = 0; ok && i < 8; i++) {
            expected = (expected << 8) | (unsigned char)PyBytes_AS_STRING(digest)[i];
        }
        Py_DECREF(digest);
        /* The tag and the body are fed apart: split the input in two as add_overflow does;
         * b2_* themselves, as overflow_hash takes short inputs elsewhere. */
        Blake2b state;
        b2_init8(&state);
        b2_update(&state, (const uint8_t *)data, (size_t)(n ? 1 : 0));
        b2_update(&state, (const uint8_t *)data + (n ? 1 : 0), (size_t)(n ? n - 1 : 0));
        if (!ok || b2_final8(&state) != expected) {
            PyErr_SetString(PyExc_ValueError, "the core's BLAKE2b disagrees with hashlib");
            return 0;
        }
    }
    return 1;
}

static int fold_overflow(Core *self, PyObject *bounded, uint64_t hash);

/* The overflow branch of BoundedValues.add_pair, written here rather than handed to Python
 * because a hot loop over many distinct values overflows on nearly every call: count the pair
 * and add the first 8 bytes of the BLAKE2b of its tagged form (values.OVERFLOW_*_TAG, then the
 * canonical form or else the shape), read big-endian, to the multiset fingerprint, modulo
 * 2**64. A canonical form is hashed where it lies; only a shape is encoded first. */
static int
add_overflow(Core *self, PyObject *bounded, PyObject *pair)
{
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "a summary is a pair");
        return -1;
    }
    PyObject *shape = PyTuple_GET_ITEM(pair, 0);
    PyObject *canon = PyTuple_GET_ITEM(pair, 1);
    uint64_t hash;
    if (canon == Py_None) {
        if (!PyUnicode_Check(shape)) {
            PyErr_SetString(PyExc_TypeError, "a shape is a str");
            return -1;
        }
        PyObject *body = PyUnicode_AsEncodedString(shape, "utf-8", "surrogatepass");
        if (body == NULL) {
            return -1;
        }
        hash = overflow_hash(PyBytes_AS_STRING(self->overflow_shape_tag),
                             PyBytes_GET_SIZE(self->overflow_shape_tag),
                             PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body));
        Py_DECREF(body);
    }
    else {
        if (!PyBytes_Check(canon)) {
            PyErr_SetString(PyExc_TypeError, "a canonical form is bytes");
            return -1;
        }
        hash = overflow_hash(PyBytes_AS_STRING(self->overflow_canon_tag),
                             PyBytes_GET_SIZE(self->overflow_canon_tag),
                             PyBytes_AS_STRING(canon), PyBytes_GET_SIZE(canon));
    }
    return fold_overflow(self, bounded, hash);
}

/* Counts one overflowing pair and adds its hash to the fingerprint, modulo 2**64, in the
 * set's 16 bytes (BoundedValues._overflow: count and sum, unsigned little-endian), made at
 * its first overflow and changed in place after it. */
static int
fold_overflow(Core *self, PyObject *bounded, uint64_t hash)
{
    PyObject *overflow = SLOT(bounded, self->b_overflow);
    if (overflow == NULL || overflow == Py_None) {
        overflow = PyByteArray_FromStringAndSize(NULL, 16);
        if (overflow == NULL) {
            return -1;
        }
        memset(PyByteArray_AS_STRING(overflow), 0, 16);
        Py_XSETREF(SLOT(bounded, self->b_overflow), overflow);
    }
    else if (!PyByteArray_CheckExact(overflow) || PyByteArray_GET_SIZE(overflow) != 16) {
        PyErr_SetString(PyExc_TypeError, "a set's overflow is 16 bytes");
        return -1;
    }
    uint8_t *bytes = (uint8_t *)PyByteArray_AS_STRING(overflow);
    uint64_t count = 0, sum = 0;
    for (int i = 7; i >= 0; i--) {
        count = (count << 8) | bytes[i];
        sum = (sum << 8) | bytes[8 + i];
    }
    count += 1;
    sum += hash;  /* wraps modulo 2**64 */
    for (int i = 0; i < 8; i++) {
        bytes[i] = (uint8_t)(count >> (8 * i));
        bytes[8 + i] = (uint8_t)(sum >> (8 * i));
    }
    return 0;
}

/* BoundedValues.add_pair: into the set while it has room, then into the overflow count and
 * fingerprint (add_overflow). A bounded set of another class is asked through its method. */
static int
add_pair(Core *self, PyObject *bounded, PyObject *pair)
{
    if (Py_TYPE(bounded) == (PyTypeObject *)self->bounded_type) {
        PyObject *seen = SLOT(bounded, self->b_seen);
        PyObject *limit = SLOT(bounded, self->b_limit);
        if (seen != NULL && limit != NULL && PyDict_CheckExact(seen)) {
            int present = PyDict_Contains(seen, pair);
            if (present < 0) {
                return -1;
            }
            if (present) {
                return 0;
            }
            Py_ssize_t room = PyLong_AsSsize_t(limit);
            if (room == -1 && PyErr_Occurred()) {
                return -1;
            }
            if (PyDict_GET_SIZE(seen) < room) {
                return PyDict_SetItem(seen, pair, Py_None);
            }
            return add_overflow(self, bounded, pair);
        }
    }
    PyObject *result = PyObject_CallMethodOneArg(bounded, self->str_add_pair, pair);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* ---- shapes and canonical forms of containers, objects and the other scalars ------------
 *
 * values.shape and values.canonical, written here for what the core can describe without
 * Python: None, bool, exact int, float, str, bytes, bytearray, exact tuple, list, dict, set
 * and frozenset, and instances of the classes in the memo of plain classes. Anything else
 * (an enum member, a dataclass, a str that stable.py would rewrite, ...) anywhere in a value
 * makes the walk UNKNOWN, and the whole value goes to values.summarize. The bounds are
 * values.py's (contract.core_encodings); contract.core_disagreement compares the two on
 * samples when the core is built, tests/unit/test_core_values.py on generated values. */

enum { WALK_NONE = 0, WALK_OK = 1, WALK_UNKNOWN = 2, WALK_ERROR = -1 };

typedef struct {
    char *data;          /* MAX_CANON_BYTES */
    Py_ssize_t size;     /* bytes written */
    Py_ssize_t budget;   /* values.MAX_BYTES */
} Canon;

static int
canon_put(Canon *out, const char *bytes, Py_ssize_t n)
{
    if (out->size + n > out->budget) {
        return WALK_NONE;
    }
    memcpy(out->data + out->size, bytes, n);
    out->size += n;
    return WALK_OK;
}

/* ``<tag><n>:`` */
static int
canon_head(Canon *out, char tag, Py_ssize_t n)
{
    char head[32];
    int length = snprintf(head, sizeof head, "%c%zd:", tag, n);
    return canon_put(out, head, length);
}

/* Whether a str is one stable.stable_text may rewrite (values.py must write it). */
static int
unstable_text(Core *self, PyObject *text)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->str_markers); i++) {
        int marked = PyUnicode_Contains(text, PyTuple_GET_ITEM(self->str_markers, i));
        if (marked) {
            return marked;  /* 1, or -1 on failure */
        }
    }
    return may_hold_tempfile_name(self, text);
}

/* values._str_form after the tag: ``<utf-8 length>:<utf-8, surrogatepass>``. */
static int
canon_text(Core *self, Canon *out, PyObject *text)
{
    if (PyUnicode_GET_LENGTH(text) > out->budget - out->size) {
        return WALK_NONE;  /* values._enc: len(value) > budget */
    }
    int unstable = unstable_text(self, text);
    if (unstable) {
        return unstable < 0 ? WALK_ERROR : WALK_UNKNOWN;
    }
    if (PyUnicode_IS_ASCII(text)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        char head[32];
        int length = snprintf(head, sizeof head, "%zd:", n);
        if (canon_put(out, head, length) != WALK_OK) {
            return WALK_NONE;
        }
        return canon_put(out, (const char *)PyUnicode_DATA(text), n);
    }
    PyObject *raw = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (raw == NULL) {
        return WALK_ERROR;
    }
    char head[32];
    int length = snprintf(head, sizeof head, "%zd:", PyBytes_GET_SIZE(raw));
    int rc = canon_put(out, head, length);
    if (rc == WALK_OK) {
        rc = canon_put(out, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
    }
    Py_DECREF(raw);
    return rc;
}

/* values._float_form: ``float.hex`` and ``;``, one form for every NaN. */
static int
canon_float(Core *self, Canon *out, double number)
{
    if (isnan(number)) {
        return canon_put(out, "nan;", 4);
    }
    PyObject *boxed = PyFloat_FromDouble(number);
    if (boxed == NULL) {
        return WALK_ERROR;
    }
    PyObject *hex = PyObject_CallMethodNoArgs(boxed, self->str_hex);  /* float.hex itself */
    Py_DECREF(boxed);
    if (hex == NULL) {
        return WALK_ERROR;
    }
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(hex, &n);
    int rc = text == NULL ? WALK_ERROR : canon_put(out, text, n);
    if (rc == WALK_OK) {
        rc = canon_put(out, ";", 1);
    }
    Py_DECREF(hex);
    return rc;
}

typedef struct {
    Py_ssize_t start, size;
} Span;

/* values._sorted_form over the forms written from ``first`` on, each a span: sorted as
 * Python sorts bytes, then ``<tag><n>:`` and the forms in that order replace them. */
static int
canon_sorted(Canon *out, Py_ssize_t first, Span *spans, Py_ssize_t n, char tag)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        Span key = spans[i];
        Py_ssize_t j = i - 1;
        while (j >= 0) {
            Py_ssize_t common = spans[j].size < key.size ? spans[j].size : key.size;
            int order = memcmp(out->data + spans[j].start, out->data + key.start, common);
            if (order < 0 || (order == 0 && spans[j].size <= key.size)) {
                break;
            }
            spans[j + 1] = spans[j];
            j--;
        }
        spans[j + 1] = key;
    }
    Py_ssize_t body = out->size - first;
    char *copy = PyMem_Malloc(body > 0 ? body : 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return WALK_ERROR;
    }
    memcpy(copy, out->data + first, body);
    out->size = first;
    int rc = canon_head(out, tag, n);
    for (Py_ssize_t i = 0; i < n && rc == WALK_OK; i++) {
        rc = canon_put(out, copy + (spans[i].start - first), spans[i].size);
    }
    PyMem_Free(copy);
    return rc;
}

static int canon_walk(Core *self, Canon *out, PyObject *value, int depth);

/* A sequence's items in order (values._sequence_form). UNKNOWN items do not stop the walk: a
 * later item may still make the whole form None, whatever the unknown ones would have given. */
static int
canon_items(Core *self, Canon *out, PyObject *const *items, Py_ssize_t n, int depth)
{
    int unknown = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = canon_walk(self, out, items[i], depth + 1);
        if (rc == WALK_NONE || rc == WALK_ERROR) {
            return rc;
        }
        unknown |= rc == WALK_UNKNOWN;
    }
    return unknown ? WALK_UNKNOWN : WALK_OK;
}

/* values._enc, into ``out``. */
static int
canon_walk(Core *self, Canon *out, PyObject *value, int depth)
{
    PyTypeObject *kind = Py_TYPE(value);
    if (value == Py_None) {
        return canon_put(out, "N", 1);
    }
    if (kind == &PyBool_Type) {
        return canon_put(out, value == Py_True ? "T" : "F", 1);
    }
    if (kind == &PyLong_Type) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return WALK_ERROR;
        }
        if (overflow || number == LLONG_MIN) {
            return WALK_UNKNOWN;
        }
        char text[40];
        int n = number < 0 ? snprintf(text, sizeof text, "i-%llx;", -number)
                           : snprintf(text, sizeof text, "i%llx;", number);
        return canon_put(out, text, n);
    }
    if (kind == &PyFloat_Type) {
        if (canon_put(out, "f", 1) != WALK_OK) {
            return WALK_NONE;
        }
        return canon_float(self, out, PyFloat_AS_DOUBLE(value));
    }
    if (kind == &PyUnicode_Type) {
        if (PyUnicode_GET_LENGTH(value) > out->budget - out->size) {
            return WALK_NONE;
        }
        if (canon_put(out, "s", 1) != WALK_OK) {
            return WALK_NONE;
        }
        return canon_text(self, out, value);
    }
    if (kind == &PyBytes_Type || kind == &PyByteArray_Type) {
        int is_bytes = kind == &PyBytes_Type;
        Py_ssize_t n = is_bytes ? PyBytes_GET_SIZE(value) : PyByteArray_GET_SIZE(value);
        if (n > out->budget - out->size) {
            return WALK_NONE;
        }
        if (canon_head(out, is_bytes ? 'b' : 'y', n) != WALK_OK) {
            return WALK_NONE;
        }
        return canon_put(out, is_bytes ? PyBytes_AS_STRING(value) : PyByteArray_AS_STRING(value),
                         n);
    }
    if (kind == &PyComplex_Type) {
        Py_complex number = PyComplex_AsCComplex(value);
        int rc = canon_put(out, "c", 1);
        if (rc == WALK_OK) {
            rc = canon_float(self, out, number.real);
        }
        if (rc == WALK_OK) {
            rc = canon_float(self, out, number.imag);
        }
        return rc;
    }
    if (kind == &PyTuple_Type || kind == &PyList_Type) {
        int is_tuple = kind == &PyTuple_Type;
        Py_ssize_t n = Py_SIZE(value);
        if (n > self->max_items || depth >= self->max_depth) {
            return WALK_NONE;
        }
        if (canon_head(out, is_tuple ? 't' : 'l', n) != WALK_OK) {
            return WALK_NONE;
        }
        if (is_tuple) {
            return canon_items(self, out, &PyTuple_GET_ITEM(value, 0), n, depth);
        }
        /* A list's items are read through a snapshot: nothing here runs Python code, but a
         * list is only ever read the way values.py reads it. */
        PyObject *items = PyList_AsTuple(value);
        if (items == NULL) {
            return WALK_ERROR;
        }
        int rc = canon_items(self, out, &PyTuple_GET_ITEM(items, 0), PyTuple_GET_SIZE(items),
                             depth);
        Py_DECREF(items);
        return rc;
    }
    if (kind == &PyDict_Type || kind == &PySet_Type || kind == &PyFrozenSet_Type) {
        int is_dict = kind == &PyDict_Type;
        Py_ssize_t n = is_dict ? PyDict_GET_SIZE(value) : PySet_GET_SIZE(value);
        if (n > self->max_items || depth >= self->max_depth) {
            return WALK_NONE;
        }
        Span spans[64];
        if (n > (Py_ssize_t)(sizeof spans / sizeof spans[0])) {
            return WALK_UNKNOWN;
        }
        Py_ssize_t first = out->size;
        Py_ssize_t count = 0;
        int unknown = 0;
        int rc = WALK_OK;
        if (is_dict) {
            Py_ssize_t pos = 0;
            PyObject *key, *item;
            while (count < n && PyDict_Next(value, &pos, &key, &item)) {
                Py_ssize_t start = out->size;
                rc = canon_walk(self, out, key, depth + 1);
                if (rc == WALK_OK || rc == WALK_UNKNOWN) {
                    unknown |= rc == WALK_UNKNOWN;
                    rc = canon_walk(self, out, item, depth + 1);
                }
                if (rc == WALK_NONE || rc == WALK_ERROR) {
                    return rc;
                }
                unknown |= rc == WALK_UNKNOWN;
                spans[count].start = start;
                spans[count].size = out->size - start;
                count++;
            }
        }
        else {
            PyObject *iterator = PyObject_GetIter(value);
            if (iterator == NULL) {
                return WALK_ERROR;
            }
            PyObject *item;
            while (count < n && (item = PyIter_Next(iterator)) != NULL) {
                Py_ssize_t start = out->size;
                rc = canon_walk(self, out, item, depth + 1);
                Py_DECREF(item);
                if (rc == WALK_NONE || rc == WALK_ERROR) {
                    Py_DECREF(iterator);
                    return rc;
                }
                unknown |= rc == WALK_UNKNOWN;
                spans[count].start = start;
                spans[count].size = out->size - start;
                count++;
            }
            Py_DECREF(iterator);
            if (PyErr_Occurred()) {
                return WALK_ERROR;
            }
        }
        if (count != n) {
            return WALK_UNKNOWN;  /* changed under the walk: values.py decides */
        }
        if (unknown) {
            return WALK_UNKNOWN;
        }
        return canon_sorted(out, first, spans, n, is_dict ? 'd' : kind == &PySet_Type ? 'S' : 'z');
    }
    PyObject *plain = plain_summary(self, kind, 1);
    if (plain != NULL) {
        return WALK_NONE;  /* the memo's: no canonical form for any instance */
    }
    return PyErr_Occurred() ? WALK_ERROR : WALK_UNKNOWN;
}

/* values._bounded: ``name[inner]``, or ``name[...]`` past MAX_SHAPE characters. */
static PyObject *
shape_bounded(Core *self, PyObject *name, PyObject *inner, PyObject *elided)
{
    if (PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(inner) + 2 > self->max_shape) {
        return Py_NewRef(elided);
    }
    return PyUnicode_FromFormat("%U[%U]", name, inner);
}

/* values._union of up to ``n`` shapes: at most max_union distinct ones, sorted and joined by
 * ``|``, else ``...``. Steals the shapes. */
static PyObject *
shape_union(Core *self, PyObject **shapes, Py_ssize_t n)
{
    PyObject *distinct[8];
    Py_ssize_t count = 0;
    PyObject *result = NULL;
    int many = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int seen = 0;
        for (Py_ssize_t j = 0; j < count && !seen; j++) {
            seen = PyUnicode_Compare(distinct[j], shapes[i]) == 0;
        }
        if (seen) {
            continue;
        }
        if (count >= self->max_union) {
            many = 1;
            break;
        }
        Py_ssize_t j = count++;
        while (j > 0 && PyUnicode_Compare(distinct[j - 1], shapes[i]) > 0) {
            distinct[j] = distinct[j - 1];
            j--;
        }
        distinct[j] = shapes[i];
    }
    if (many) {
        result = Py_NewRef(self->str_ellipsis);
    }
    else {
        PyObject *parts = PyTuple_New(count);
        if (parts != NULL) {
            for (Py_ssize_t j = 0; j < count; j++) {
                PyTuple_SET_ITEM(parts, j, Py_NewRef(distinct[j]));
            }
            result = PyUnicode_Join(self->str_bar, parts);
            Py_DECREF(parts);
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(shapes[i]);
    }
    return result;
}

static PyObject *shape_walk(Core *self, PyObject *value, int depth);

/* The shapes of ``items``, new references, into ``shapes``; -1 with an error, 0 when one is
 * unknown (none kept), 1 when all are known. */
static int
shape_items(Core *self, PyObject *const *items, Py_ssize_t n, int depth, PyObject **shapes)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        shapes[i] = shape_walk(self, items[i], depth + 1);
        if (shapes[i] == NULL) {
            for (Py_ssize_t j = 0; j < i; j++) {
                Py_DECREF(shapes[j]);
            }
            return PyErr_Occurred() ? -1 : 0;
        }
    }
    return 1;
}

#define SHAPE_NAME(i) (self->shape_names[i])
enum { SN_NONE, SN_BOOL, SN_INT, SN_FLOAT, SN_STR, SN_BYTES, SN_COMPLEX, SN_BYTEARRAY,
       SN_TUPLE, SN_LIST, SN_DICT, SN_SET, SN_FROZENSET, SN_COUNT };

/* values._shape: a new reference, or NULL without an error when the value holds something
 * only values.py can describe. */
static PyObject *
shape_walk(Core *self, PyObject *value, int depth)
{
    PyTypeObject *kind = Py_TYPE(value);
    int index = -1;
    if (value == Py_None) index = SN_NONE;
    else if (kind == &PyBool_Type) index = SN_BOOL;
    else if (kind == &PyLong_Type) index = SN_INT;
    else if (kind == &PyFloat_Type) index = SN_FLOAT;
    else if (kind == &PyUnicode_Type) index = SN_STR;
    else if (kind == &PyBytes_Type) index = SN_BYTES;
    else if (kind == &PyComplex_Type) index = SN_COMPLEX;
    else if (kind == &PyByteArray_Type) index = SN_BYTEARRAY;
    if (index >= 0) {
        return Py_NewRef(SHAPE_NAME(index));
    }
    PyObject *inner = NULL;
    PyObject *shapes[64];
    if (kind == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(value);
        if (n > 8) {
            return Py_NewRef(self->shape_elided[SN_TUPLE]);
        }
        if (depth >= self->shape_depth) {
            return Py_NewRef(n ? self->shape_elided[SN_TUPLE] : self->shape_empty[SN_TUPLE]);
        }
        int rc = shape_items(self, &PyTuple_GET_ITEM(value, 0), n, depth, shapes);
        if (rc <= 0) {
            return NULL;
        }
        PyObject *parts = PyTuple_New(n);
        if (parts == NULL) {
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_DECREF(shapes[i]);
            }
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyTuple_SET_ITEM(parts, i, shapes[i]);
        }
        inner = PyUnicode_Join(self->str_comma_tight, parts);
        Py_DECREF(parts);
        index = SN_TUPLE;
    }
    else if (kind == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        if (depth >= self->shape_depth) {
            return Py_NewRef(n ? self->shape_elided[SN_LIST] : self->shape_empty[SN_LIST]);
        }
        Py_ssize_t limit = self->shape_items[depth];
        PyObject *items = PyList_GetSlice(value, 0, limit < n ? limit : n);
        if (items == NULL) {
            return NULL;
        }
        Py_ssize_t m = PyList_GET_SIZE(items);
        int rc = m > 64 ? 0 : shape_items(self, &PyList_GET_ITEM(items, 0), m, depth, shapes);
        Py_DECREF(items);
        if (rc <= 0) {
            return NULL;
        }
        inner = shape_union(self, shapes, m);
        index = SN_LIST;
    }
    else if (kind == &PyDict_Type) {
        Py_ssize_t n = PyDict_GET_SIZE(value);
        if (depth >= self->shape_depth || n == 0) {
            return Py_NewRef(n ? self->shape_elided[SN_DICT] : self->shape_empty[SN_DICT]);
        }
        Py_ssize_t limit = self->shape_items[depth];
        if (limit > 32) {
            return NULL;
        }
        PyObject *keys[32];
        Py_ssize_t pos = 0, m = 0;
        PyObject *key, *item;
        int known = 1;
        while (m < limit && PyDict_Next(value, &pos, &key, &item)) {
            keys[m] = shape_walk(self, key, depth + 1);
            shapes[m] = keys[m] == NULL ? NULL : shape_walk(self, item, depth + 1);
            if (shapes[m] == NULL) {
                Py_XDECREF(keys[m]);
                known = 0;
                break;
            }
            m++;
        }
        if (!known) {
            for (Py_ssize_t i = 0; i < m; i++) {
                Py_DECREF(keys[i]);
                Py_DECREF(shapes[i]);
            }
            return NULL;
        }
        PyObject *key_union = shape_union(self, keys, m);
        PyObject *item_union = shape_union(self, shapes, m);
        if (key_union != NULL && item_union != NULL) {
            inner = PyUnicode_FromFormat("%U,%U", key_union, item_union);
        }
        Py_XDECREF(key_union);
        Py_XDECREF(item_union);
        index = SN_DICT;
    }
    else if (kind == &PySet_Type || kind == &PyFrozenSet_Type) {
        index = kind == &PySet_Type ? SN_SET : SN_FROZENSET;
        Py_ssize_t n = PySet_GET_SIZE(value);
        if (depth >= self->shape_depth || n > self->shape_items[depth] * 4) {
            return Py_NewRef(n ? self->shape_elided[index] : self->shape_empty[index]);
        }
        if (n > 64) {
            return NULL;
        }
        PyObject *iterator = PyObject_GetIter(value);
        if (iterator == NULL) {
            return NULL;
        }
        Py_ssize_t m = 0;
        PyObject *item;
        int known = 1;
        while (m < n && (item = PyIter_Next(iterator)) != NULL) {
            shapes[m] = shape_walk(self, item, depth + 1);
            Py_DECREF(item);
            if (shapes[m] == NULL) {
                known = 0;
                break;
            }
            m++;
        }
        Py_DECREF(iterator);
        if (!known || PyErr_Occurred() || m != n) {
            for (Py_ssize_t i = 0; i < m; i++) {
                Py_DECREF(shapes[i]);
            }
            return NULL;
        }
        inner = shape_union(self, shapes, m);
    }
    else {
        PyObject *plain = plain_summary(self, kind, 1);
        return plain == NULL ? NULL : Py_NewRef(PyTuple_GET_ITEM(plain, 0));
    }
    if (inner == NULL) {
        return NULL;
    }
    PyObject *out = shape_bounded(self, SHAPE_NAME(index), inner, self->shape_elided[index]);
    Py_DECREF(inner);
    return out;
}

/* (shape, canonical) of a value that is no small scalar, or NULL without an error when only
 * values.summarize can tell. */
static PyObject *
walked_summary(Core *self, PyObject *value)
{
    PyObject *shape = shape_walk(self, value, 0);
    if (shape == NULL) {
        return NULL;
    }
    char data[MAX_CANON_BYTES];
    Canon out = {data, 0, self->max_bytes};
    int rc = canon_walk(self, &out, value, 0);
    PyObject *summary = NULL;
    if (rc == WALK_NONE) {
        summary = PyTuple_Pack(2, shape, Py_None);
    }
    else if (rc == WALK_OK) {
        PyObject *form = PyBytes_FromStringAndSize(data, out.size);
        if (form != NULL) {
            summary = PyTuple_Pack(2, shape, form);
            Py_DECREF(form);
        }
    }
    Py_DECREF(shape);
    return summary;
}

/* ---- buckets of state values (values.bucket) --------------------------------------------- */

enum { BK_NONE, BK_TRUE, BK_FALSE, BK_NAN, BK_ZERO, BK_POS, BK_NEG, BK_NONEMPTY, BK_EMPTY,
       BK_ONE, BK_MANY, BK_ABSENT, BK_COUNT };
static const char *const BUCKET_NAMES[BK_COUNT] = {
    "none", "bool:true", "bool:false", "nan", "zero", "pos", "neg", "nonempty", "empty",
    "one", "many", "absent"};

/* Whether enum.Enum is in ``kind``'s MRO (read from the type object, as type_mro does). */
static int
is_enum_class(Core *self, PyTypeObject *kind)
{
    PyObject *mro = kind->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro)) {
        return 1;  /* unknown: not cached */
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        if (PyTuple_GET_ITEM(mro, i) == self->enum_type) {
            return 1;
        }
    }
    return 0;
}

/* values.bucket, as a new reference: the scalars' and containers' here, a class's from the
 * core's copy of its entry, everything else (an enum member, a class seen first) from
 * values.bucket, whose answer for a class is kept when reflect's memo of names has it. */
static PyObject *
state_bucket(Core *self, PyObject *value)
{
    PyTypeObject *kind = Py_TYPE(value);
    int index = -1;
    if (value == Py_None) {
        index = BK_NONE;
    }
    else if (kind == &PyBool_Type) {
        index = value == Py_True ? BK_TRUE : BK_FALSE;
    }
    else if (kind == &PyFloat_Type) {
        double number = PyFloat_AS_DOUBLE(value);
        index = isnan(number) ? BK_NAN : number == 0.0 ? BK_ZERO : number > 0 ? BK_POS : BK_NEG;
    }
    else if (kind == &PyLong_Type) {
        int overflow = 0;
        long number = PyLong_AsLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return NULL;
        }
        index = overflow ? (overflow > 0 ? BK_POS : BK_NEG)
                         : number == 0 ? BK_ZERO : number > 0 ? BK_POS : BK_NEG;
    }
    else if (kind == &PyUnicode_Type || kind == &PyBytes_Type || kind == &PyByteArray_Type) {
        Py_ssize_t n = kind == &PyUnicode_Type ? PyUnicode_GET_LENGTH(value) : Py_SIZE(value);
        index = n ? BK_NONEMPTY : BK_EMPTY;
    }
    else if (kind == &PyList_Type || kind == &PyTuple_Type || kind == &PyDict_Type ||
             kind == &PySet_Type || kind == &PyFrozenSet_Type) {
        Py_ssize_t n = kind == &PyDict_Type ? PyDict_GET_SIZE(value)
                       : (kind == &PySet_Type || kind == &PyFrozenSet_Type) ? PySet_GET_SIZE(value)
                                                                            : Py_SIZE(value);
        index = n == 0 ? BK_EMPTY : n == 1 ? BK_ONE : BK_MANY;
    }
    if (index >= 0) {
        return Py_NewRef(self->bucket_names[index]);
    }
    int entry = class_entry(self, kind);
    if (self->classes[entry].bucket != NULL) {
        return Py_NewRef(self->classes[entry].bucket);
    }
    PyObject *bucket = PyObject_CallOneArg(self->bucket, value);
    if (bucket == NULL || !PyUnicode_CheckExact(bucket) || is_enum_class(self, kind)) {
        return bucket;
    }
    /* "type:" + type_name(kind): the class's alone, once reflect's memo names it. */
    PyObject *name = memo_entry(self->display_names, kind);
    if (name == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(bucket);
            return NULL;
        }
        return bucket;
    }
    entry = class_entry(self, kind);  /* the call may have run a phase reset */
    Py_XSETREF(self->classes[entry].bucket, Py_NewRef(bucket));
    return bucket;
}

/* Borrowed ``__dict__`` descriptor of ``kind`` as reflect._DICT_DESCRIPTORS has it (any
 * object: MISSING or None when there is none), or NULL (no error) when that memo has no entry
 * for the class yet. */
static PyObject *
dict_descriptor(Core *self, PyTypeObject *kind)
{
    int index = class_entry(self, kind);
    if (self->classes[index].dict_descr != NULL) {
        return self->classes[index].dict_descr;
    }
    PyObject *descr = memo_entry(self->dict_descriptors, kind);
    if (descr != NULL) {
        self->classes[index].dict_descr = Py_NewRef(descr);
    }
    return descr;
}

/* reflect.instance_dict: a new reference to ``value``'s own ``__dict__`` read through the
 * builtin getset or member descriptor of its class, when every key is an exact str; Py_None
 * when it has none or reading it could run user code; NULL without an error when reflect's
 * memo does not know the class yet (values.py must read it), with one on failure. */
static PyObject *
instance_fields(Core *self, PyObject *value)
{
    PyTypeObject *kind = Py_TYPE(value);
    PyObject *descr = dict_descriptor(self, kind);
    if (descr == NULL) {
        return NULL;
    }
    if (!Py_IS_TYPE(descr, &PyGetSetDescr_Type) && !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        Py_RETURN_NONE;
    }
    Py_INCREF(descr);
    PyObject *inst = Py_TYPE(descr)->tp_descr_get(descr, value, (PyObject *)kind);
    Py_DECREF(descr);
    if (inst == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();  /* a member never set */
            Py_RETURN_NONE;
        }
        return NULL;
    }
    if (!PyDict_CheckExact(inst)) {
        Py_DECREF(inst);
        Py_RETURN_NONE;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(inst, &pos, &key, &item)) {
        if (!PyUnicode_CheckExact(key)) {
            Py_DECREF(inst);
            Py_RETURN_NONE;
        }
    }
    return inst;
}

/* ---- the allocation-free path of a call's values (#26.2) ---------------------------------
 *
 * A parser's hot loop passes a new token on nearly every call, and each new value used to cost
 * its summary (a bytes object and a tuple), the labelled pair (a str and a tuple), a lookup of
 * that pair in the bounded set and, once the set is full, the fingerprint. For the values the
 * core can write itself without asking Python (None, exact bool, int, ASCII str, bytes, and
 * instances of the classes in the memo of plain classes), fast_add does the same in a buffer on
 * the stack: the canonical forms (and the labelled shape) are written there, compared with the
 * set's at most FAST_SET_LIMIT kept pairs byte for byte, and, when the set is full, hashed
 * there into the overflow fingerprint. Nothing is allocated for a value already in the set.
 * A pair that is new and still has room in the set is built by the general path (at most
 * ``limit`` times per node), which also takes every value this path does not know, so both
 * cores keep byte-identical genomes: contract.core_disagreement compares this path with
 * values.py when the core is built, tests/unit/test_core_values.py on generated calls. */

#define FAST_FORM_BYTES 512   /* one value's canonical form; longer ones take the general path */
#define FAST_CANON_BYTES 2048  /* a call's forms and separators */
#define FAST_SET_LIMIT 64     /* kept pairs compared one by one; larger sets take the general path */
#define FAST_SHAPE_PIECES (4 * ARG_CACHE_ARGS)

enum { FAST_FORM = 1, FAST_SHAPE_ONLY = 0, FAST_NO = -1, FAST_ERROR = -2 };

/* ``i<hex>;`` (values._enc of an int), without printf. */
static Py_ssize_t
fast_int_form(char *out, long long number)
{
    char digits[20];
    int n = 0;
    unsigned long long magnitude = number < 0 ? 0ULL - (unsigned long long)number
                                              : (unsigned long long)number;
    do {
        digits[n++] = "0123456789abcdef"[magnitude & 15u];
        magnitude >>= 4;
    } while (magnitude);
    Py_ssize_t size = 0;
    out[size++] = 'i';
    if (number < 0) {
        out[size++] = '-';
    }
    while (n) {
        out[size++] = digits[--n];
    }
    out[size++] = ';';
    return size;
}

/* ``<tag><n>:`` followed by ``n`` bytes, when it fits in ``room``; else -1. */
static Py_ssize_t
fast_counted_form(char *out, Py_ssize_t room, char tag, const char *data, Py_ssize_t n)
{
    char head[24];
    int length = 0;
    head[length++] = tag;
    char digits[20];
    int d = 0;
    Py_ssize_t rest = n;
    do {
        digits[d++] = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest);
    while (d) {
        head[length++] = digits[--d];
    }
    head[length++] = ':';
    if (length + n > room) {
        return -1;
    }
    memcpy(out, head, length);
    memcpy(out + length, data, n);
    return length + n;
}

/* One value: its canonical form written to ``out`` (at most ``room`` bytes, *size set) and its
 * shape (borrowed) for FAST_FORM; the shape alone for FAST_SHAPE_ONLY (an instance of a class
 * in the memo of plain classes); FAST_NO when only the general path may summarise it (a float,
 * a container, a str that stable.py may rewrite or that is not ASCII, a form longer than room,
 * a class not in the memo); FAST_ERROR with an exception set. */
static int
fast_value(Core *self, PyObject *value, char *out, Py_ssize_t room, Py_ssize_t *size,
           PyObject **shape, PyObject **held)
{
    PyTypeObject *kind = Py_TYPE(value);
    if (value == Py_None) {
        out[0] = 'N';
        *size = 1;
        *shape = SHAPE_NAME(SN_NONE);
        return FAST_FORM;
    }
    if (kind == &PyBool_Type) {
        out[0] = value == Py_True ? 'T' : 'F';
        *size = 1;
        *shape = SHAPE_NAME(SN_BOOL);
        return FAST_FORM;
    }
    if (kind == &PyLong_Type) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return FAST_ERROR;
        }
        if (overflow || number == LLONG_MIN || room < 24) {
            return FAST_NO;
        }
        *size = fast_int_form(out, number);
        *shape = SHAPE_NAME(SN_INT);
        return FAST_FORM;
    }
    if (kind == &PyUnicode_Type) {
        if (!PyUnicode_IS_ASCII(value) || PyUnicode_GET_LENGTH(value) >= room) {
            return FAST_NO;
        }
        int unstable = unstable_text(self, value);
        if (unstable) {
            return unstable < 0 ? FAST_ERROR : FAST_NO;
        }
        Py_ssize_t n = fast_counted_form(out, room, 's', (const char *)PyUnicode_DATA(value),
                                         PyUnicode_GET_LENGTH(value));
        if (n < 0) {
            return FAST_NO;
        }
        *size = n;
        *shape = SHAPE_NAME(SN_STR);
        return FAST_FORM;
    }
    if (kind == &PyBytes_Type) {
        Py_ssize_t n = fast_counted_form(out, room, 'b', PyBytes_AS_STRING(value),
                                         PyBytes_GET_SIZE(value));
        if (n < 0) {
            return FAST_NO;
        }
        *size = n;
        *shape = SHAPE_NAME(SN_BYTES);
        return FAST_FORM;
    }
    if (never_plain(kind)) {
        return FAST_NO;
    }
    PyObject *plain = plain_summary(self, kind, 1);
    if (plain == NULL) {
        return PyErr_Occurred() ? FAST_ERROR : FAST_NO;
    }
    /* Held until the pair is done: a later value's class may take this one's place in the
     * core's copy of the memo (values.py's memo holds it too, but this does not rely on it). */
    *held = Py_NewRef(PyTuple_GET_ITEM(plain, 0));
    *shape = *held;
    return FAST_SHAPE_ONLY;
}

/* Whether ``text`` (any str) is the concatenation of the ASCII ``pieces``. */
static int
fast_shape_is(PyObject *text, PyObject *const *pieces, int count, Py_ssize_t length)
{
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text) ||
        PyUnicode_GET_LENGTH(text) != length) {
        return 0;
    }
    const char *data = (const char *)PyUnicode_DATA(text);
    for (int i = 0; i < count; i++) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(pieces[i]);
        if (memcmp(data, PyUnicode_DATA(pieces[i]), n) != 0) {
            return 0;
        }
        data += n;
    }
    return 1;
}

/* Tracer._record_args (``labels``: CodeInfo.arg_labels) or the results' add_pair of one
 * summary (``labels`` NULL; ``shape_only``: CodeInfo.salted_results), for the ``n`` values,
 * into ``bounded``, without building the pair: 1 when done, 0 when the general path must do
 * it (nothing was changed), -1 with an exception set. */
static int
fast_add_held(Core *self, PyObject *bounded, PyObject *labels, PyObject *const *values,
              Py_ssize_t n, int shape_only, PyObject **held);

static int
fast_add(Core *self, PyObject *bounded, PyObject *labels, PyObject *const *values, Py_ssize_t n,
         int shape_only)
{
    PyObject *held[ARG_CACHE_ARGS] = {NULL};
    int rc = fast_add_held(self, bounded, labels, values, n, shape_only, held);
    for (int i = 0; i < ARG_CACHE_ARGS; i++) {
        Py_XDECREF(held[i]);
    }
    return rc;
}

/* fast_add, with the shapes it borrows from the memo held in ``held`` (one per value). */
static int
fast_add_held(Core *self, PyObject *bounded, PyObject *labels, PyObject *const *values,
              Py_ssize_t n, int shape_only, PyObject **held)
{
    if (Py_TYPE(bounded) != (PyTypeObject *)self->bounded_type || n < 1 || n > ARG_CACHE_ARGS) {
        return 0;
    }
    PyObject *seen = SLOT(bounded, self->b_seen);
    PyObject *limit = SLOT(bounded, self->b_limit);
    if (seen == NULL || limit == NULL || !PyDict_CheckExact(seen) || !PyLong_CheckExact(limit) ||
        PyDict_GET_SIZE(seen) > FAST_SET_LIMIT) {
        return 0;
    }
    char canon[FAST_CANON_BYTES];
    Py_ssize_t canon_size = 0;
    Py_ssize_t budget = self->max_bytes < FAST_FORM_BYTES ? self->max_bytes : FAST_FORM_BYTES;
    if (n > 1 && self->canon_sep == NULL) {
        return 0;
    }
    const char sep = n > 1 ? PyBytes_AS_STRING(self->canon_sep)[0] : 0;
    PyObject *pieces[FAST_SHAPE_PIECES];
    int count = 0;
    Py_ssize_t shape_length = 0;
    int complete = !shape_only;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0) {
            pieces[count++] = self->comma;
        }
        if (labels != NULL) {
            pieces[count++] = PyTuple_GET_ITEM(labels, i);
        }
        if (complete && i > 0) {
            if (canon_size >= (Py_ssize_t)sizeof canon) {
                return 0;  /* the buffer is full: the general path */
            }
            canon[canon_size++] = sep;
        }
        Py_ssize_t size = 0;
        PyObject *shape = NULL;
        /* When the pair has no canonical form any more, a form is only written to learn the
         * shape: into the same place, never kept. */
        Py_ssize_t room = (Py_ssize_t)sizeof canon - canon_size;
        if (room > budget) {
            room = budget;
        }
        if (room < 24) {
            return 0;  /* the buffer is full: the general path */
        }
        int rc = fast_value(self, values[i], canon + canon_size, room, &size, &shape, &held[i]);
        if (rc == FAST_ERROR) {
            return -1;
        }
        if (rc == FAST_NO) {
            return 0;
        }
        if (rc == FAST_SHAPE_ONLY) {
            complete = 0;
        }
        else if (complete) {
            canon_size += size;
        }
        pieces[count++] = shape;
    }
    for (int i = 0; i < count; i++) {
        if (!PyUnicode_CheckExact(pieces[i]) || !PyUnicode_IS_ASCII(pieces[i])) {
            return 0;  /* a label or a class name that is not ASCII */
        }
        shape_length += PyUnicode_GET_LENGTH(pieces[i]);
    }
    Py_ssize_t pos = 0;
    PyObject *key, *ignored;
    while (PyDict_Next(seen, &pos, &key, &ignored)) {
        if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2) {
            return 0;
        }
        PyObject *form = PyTuple_GET_ITEM(key, 1);
        if (form != Py_None && !PyBytes_CheckExact(form)) {
            return 0;
        }
        if (complete ? (form == Py_None || PyBytes_GET_SIZE(form) != canon_size ||
                        memcmp(PyBytes_AS_STRING(form), canon, canon_size) != 0)
                     : form != Py_None) {
            continue;
        }
        if (fast_shape_is(PyTuple_GET_ITEM(key, 0), pieces, count, shape_length)) {
            return 1;  /* already kept */
        }
    }
    Py_ssize_t room = PyLong_AsSsize_t(limit);
    if (room == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (PyDict_GET_SIZE(seen) < room) {
        return 0;  /* a new entry: the general path builds the pair the set keeps */
    }
    uint64_t hash;
    if (complete) {
        hash = overflow_hash(PyBytes_AS_STRING(self->overflow_canon_tag),
                             PyBytes_GET_SIZE(self->overflow_canon_tag), canon, canon_size);
    }
    else if (PyBytes_GET_SIZE(self->overflow_shape_tag) + shape_length <= OVERFLOW_SHORT_BYTES) {
        uint8_t data[OVERFLOW_SHORT_BYTES];
        Py_ssize_t size = PyBytes_GET_SIZE(self->overflow_shape_tag);
        memcpy(data, PyBytes_AS_STRING(self->overflow_shape_tag), size);
        for (int i = 0; i < count; i++) {  /* ASCII: the str's bytes are its UTF-8 */
            memcpy(data + size, PyUnicode_DATA(pieces[i]), PyUnicode_GET_LENGTH(pieces[i]));
            size += PyUnicode_GET_LENGTH(pieces[i]);
        }
        hash = short_hash(data, size);
    }
    else {
        Blake2b state;
        b2_init8(&state);
        b2_update(&state, (const uint8_t *)PyBytes_AS_STRING(self->overflow_shape_tag),
                  (size_t)PyBytes_GET_SIZE(self->overflow_shape_tag));
        for (int i = 0; i < count; i++) {  /* ASCII: the str's bytes are its UTF-8 */
            b2_update(&state, (const uint8_t *)PyUnicode_DATA(pieces[i]),
                      (size_t)PyUnicode_GET_LENGTH(pieces[i]));
        }
        hash = b2_final8(&state);
    }
    return fold_overflow(self, bounded, hash) < 0 ? -1 : 1;
}

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

static void
forget_plain(Core *self)
{
    for (int i = 0; i < PLAIN_CACHE_SIZE; i++) {
        Py_CLEAR(self->plain_cache[i].type);
        Py_CLEAR(self->plain_cache[i].summary);
    }
}

/* Borrowed summary of every instance of ``kind`` when values._PLAIN_SUMMARY holds one (the
 * phase's memo of plain classes; an entry never changes until the memo is reset), else NULL
 * (with an error only on failure). Answered from the core's copy; ``ask`` also reads the
 * Python memo itself on a miss (which costs an int for the key). */
static PyObject *
plain_summary(Core *self, PyTypeObject *kind, int ask)
{
    PyObject *epoch = PyList_GET_SIZE(self->class_epoch) ? PyList_GET_ITEM(self->class_epoch, 0)
                                                         : NULL;
    if (epoch != self->plain_epoch) {
        forget_plain(self);
        Py_XSETREF(self->plain_epoch, Py_XNewRef(epoch));
    }
    size_t index = (((size_t)kind >> 4) ^ ((size_t)kind >> 12)) & (PLAIN_CACHE_SIZE - 1);
    if (self->plain_cache[index].type == (PyObject *)kind) {
        return self->plain_cache[index].summary;
    }
    if (!ask) {
        return NULL;
    }
    PyObject *key = PyLong_FromVoidPtr(kind);
    if (key == NULL) {
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(self->plain_summaries, key);
    Py_DECREF(key);
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2 ||
        PyTuple_GET_ITEM(entry, 0) != (PyObject *)kind) {
        return NULL;
    }
    PyObject *summary = PyTuple_GET_ITEM(entry, 1);
    if (!PyTuple_CheckExact(summary) || PyTuple_GET_SIZE(summary) != 2 ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(summary, 0)) ||
        PyTuple_GET_ITEM(summary, 1) != Py_None) {
        return NULL;
    }
    Py_XSETREF(self->plain_cache[index].type, Py_NewRef((PyObject *)kind));
    Py_XSETREF(self->plain_cache[index].summary, Py_NewRef(summary));
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

/* The overflow branch of BoundedValues.add_pair, written here rather than handed to Python
 * because a hot loop over many distinct values overflows on nearly every call: count the pair
 * and add the first 8 bytes of the BLAKE2b of its tagged form (values.OVERFLOW_*_TAG, then the
 * canonical form or else the shape), read big-endian, to the multiset fingerprint, modulo
 * 2**64. */
static int
add_overflow(Core *self, PyObject *bounded, PyObject *pair)
{
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "a summary is a pair");
        return -1;
    }
    PyObject *shape = PyTuple_GET_ITEM(pair, 0);
    PyObject *canon = PyTuple_GET_ITEM(pair, 1);
    PyObject *count = SLOT(bounded, self->b_count);
    PyObject *sum = SLOT(bounded, self->b_sum);
    if (count == NULL || sum == NULL || !PyLong_CheckExact(sum)) {
        PyErr_SetString(PyExc_TypeError, "overflow slots are not set");
        return -1;
    }
    PyObject *body;
    PyObject *tag;
    if (canon == Py_None) {
        if (!PyUnicode_Check(shape)) {
            PyErr_SetString(PyExc_TypeError, "a shape is a str");
            return -1;
        }
        body = PyUnicode_AsEncodedString(shape, "utf-8", "surrogatepass");
        tag = self->overflow_shape_tag;
    }
    else {
        if (!PyBytes_Check(canon)) {
            PyErr_SetString(PyExc_TypeError, "a canonical form is bytes");
            return -1;
        }
        body = Py_NewRef(canon);
        tag = self->overflow_canon_tag;
    }
    if (body == NULL) {
        return -1;
    }
    Py_ssize_t tag_size = PyBytes_GET_SIZE(tag);
    PyObject *data = PyBytes_FromStringAndSize(NULL, tag_size + PyBytes_GET_SIZE(body));
    if (data == NULL) {
        Py_DECREF(body);
        return -1;
    }
    memcpy(PyBytes_AS_STRING(data), PyBytes_AS_STRING(tag), tag_size);
    memcpy(PyBytes_AS_STRING(data) + tag_size, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body));
    Py_DECREF(body);
    PyObject *call_args = PyTuple_Pack(1, data);
    Py_DECREF(data);
    if (call_args == NULL) {
        return -1;
    }
    PyObject *hasher = PyObject_Call(self->blake2b, call_args, self->blake2b_kwargs);
    Py_DECREF(call_args);
    if (hasher == NULL) {
        return -1;
    }
    PyObject *digest = PyObject_CallMethodNoArgs(hasher, self->str_digest);
    Py_DECREF(hasher);
    if (digest == NULL) {
        return -1;
    }
    if (!PyBytes_Check(digest) || PyBytes_GET_SIZE(digest) != 8) {
        Py_DECREF(digest);
        PyErr_SetString(PyExc_ValueError, "an 8-byte digest was expected");
        return -1;
    }
    const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(digest);
    unsigned long long hash = 0;
    for (int i = 0; i < 8; i++) {
        hash = (hash << 8) | bytes[i];
    }
    Py_DECREF(digest);
    unsigned long long total = PyLong_AsUnsignedLongLong(sum);
    if (total == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    PyObject *new_sum = PyLong_FromUnsignedLongLong(total + hash); /* wraps modulo 2**64 */
    if (new_sum == NULL) {
        return -1;
    }
    if (increment(bounded, self->b_count) < 0) {
        Py_DECREF(new_sum);
        return -1;
    }
    Py_SETREF(SLOT(bounded, self->b_sum), new_sum);
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

/*
 * The compiled core of the collector: the hot sys.monitoring callbacks in C.
 *
 * The pure-Python callbacks in tracer.py are the definition of what is recorded. This core
 * takes the common path of each event (a known code object, a parent frame already
 * attributed, a tree node that already exists) and hands every other case, unchanged, to the
 * Python callback: attribution, scope and decisions are only ever decided in Python.
 *
 * What it does write itself, it writes to a contract it is given (contract.py): tree nodes,
 * code infos and bounded value sets are the Python classes of contract.py and values.py,
 * whose ``__slots__`` are read and written here through the offsets of the slot descriptors,
 * learned when the core is built (and checked to be object slots); the node type numbers,
 * separators, branch cache key, value limits, overflow tags and the tempfile-name hash are
 * Core() arguments (contract.core_encodings). The byte forms of the scalars it summarises
 * (_accel_values.c) cannot be handed over; contract.core_disagreement compares them with
 * values.py when the core is built, and a core that disagrees records nothing. The test suite
 * records the same projects with both cores and compares the stored genomes byte for byte.
 *
 * Only CPython 3.12 and 3.13 are supported (the rows of the capability table that are
 * tested); any other interpreter uses the Python callbacks.
 */
#include "_accel.h"
#include "_accel_values.c"

static int
slot_offset(PyObject *type, const char *name, Py_ssize_t *out)
{
    PyObject *descr = PyObject_GetAttrString(type, name);
    if (descr == NULL) {
        return -1;
    }
    if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s is not a slot", name);
        Py_DECREF(descr);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != Py_T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s is not an object slot", name);
        Py_DECREF(descr);
        return -1;
    }
    *out = member->offset;
    Py_DECREF(descr);
    return 0;
}

/* Clears an Exception raised while failed() reports one; 0 when something else (a
 * KeyboardInterrupt) must propagate. */
static int
cleared(void)
{
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return 0;
        }
        PyErr_Clear();
    }
    return 1;
}

/* The Python callbacks catch Exception and count it (Tracer.failed); anything else
 * propagates. Under DIFFGENOME_DEBUG=callbacks the exception is handed to on_error, which
 * keeps the first one of each kind. */
static PyObject *
failed(Core *self)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        return NULL;
    }
    int recursion = PyErr_ExceptionMatches(PyExc_RecursionError);
    PyObject *exc = PyErr_GetRaisedException();
    if (recursion && self->recursion_reason != NULL) {
        /* Near the limit the Python code the core calls (a new node) finds no frame left:
         * the phase says so, as the Python callbacks' does. No Python frame is used here. */
        PyObject *reasons = PyObject_GetAttr(self->tracer, self->str_reasons);
        if (reasons != NULL && PySet_Check(reasons)) {
            PySet_Add(reasons, self->recursion_reason);
        }
        Py_XDECREF(reasons);
        PyErr_Clear();
    }
    PyObject *errors = PyObject_GetAttr(self->tracer, self->str_errors);
    if (errors != NULL) {
        PyObject *more = PyNumber_Add(errors, one);
        Py_DECREF(errors);
        if (more != NULL) {
            PyObject_SetAttr(self->tracer, self->str_errors, more);
            Py_DECREF(more);
        }
    }
    if (!cleared()) {
        Py_XDECREF(exc);
        return NULL;
    }
    if (self->on_error != Py_None && exc != NULL) {
        PyObject *kept = PyObject_CallOneArg(self->on_error, exc);
        Py_XDECREF(kept);
    }
    Py_XDECREF(exc);
    if (!cleared()) {
        return NULL;
    }
    Py_RETURN_NONE;
}


/* ``id(obj)`` as a new reference, for an object at ``ptr``: the same int object for the same
 * address while it stays in a direct-mapped table (an int's value is all it says), so the
 * tables keyed by ids (active frames, code infos) find their own keys by identity. */
static PyObject *
id_key(Core *self, void *ptr)
{
    size_t index = ((size_t)ptr >> 4) & (ID_KEY_CACHE_SIZE - 1);
    if (self->id_keys[index].ptr == ptr && self->id_keys[index].key != NULL) {
        return Py_NewRef(self->id_keys[index].key);
    }
    PyObject *key = PyLong_FromVoidPtr(ptr);
    if (key != NULL) {
        self->id_keys[index].ptr = ptr;
        Py_XSETREF(self->id_keys[index].key, Py_NewRef(key));
    }
    return key;
}

/* Borrowed value of dict[id(ptr)], NULL without error when absent. */
static PyObject *
get_by_id(Core *self, PyObject *dict, void *ptr)
{
    PyObject *key = id_key(self, ptr);
    if (key == NULL) {
        return NULL;
    }
    PyObject *value = PyDict_GetItemWithError(dict, key);
    Py_DECREF(key);
    return value;
}

/* Borrowed ``codes.get(id(code))`` through a direct-mapped cache of pointers. Sound because
 * the symbol table keeps every code object it has an entry for alive
 * (``SymbolTable._keep_alive``, collect/symbols.py) and never replaces an entry: a cached
 * pointer can neither dangle nor be reused by another code object, and its info never
 * changes. */
static PyObject *
code_info(Core *self, PyObject *code)
{
    size_t index = ((size_t)code >> 4) & (CODE_CACHE_SIZE - 1);
    if (self->code_cache[index].code == code) {
        return self->code_cache[index].info;
    }
    PyObject *info = get_by_id(self, self->codes, code);
    if (info != NULL) {
        self->code_cache[index].code = code;
        self->code_cache[index].info = info;
    }
    return info;
}

static int
set_by_id(Core *self, PyObject *dict, void *ptr, PyObject *value)
{
    PyObject *key = id_key(self, ptr);
    if (key == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(dict, key, value);
    Py_DECREF(key);
    return rc;
}

/* New reference to dict.pop(id(ptr)); NULL without error when absent. */
static PyObject *
pop_by_id(Core *self, PyObject *dict, void *ptr)
{
    PyObject *key = id_key(self, ptr);
    if (key == NULL) {
        return NULL;
    }
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value != NULL) {
        Py_INCREF(value);
        if (PyDict_DelItem(dict, key) < 0) {
            Py_CLEAR(value);
        }
    }
    Py_DECREF(key);
    return value;
}

static PyObject *
local_value(PyObject *locals, PyObject *name)
{
    if (PyDict_CheckExact(locals)) {
        PyObject *value = PyDict_GetItemWithError(locals, name);
        if (value == NULL) {
            return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        }
        return Py_NewRef(value);
    }
    PyObject *value = PyObject_GetItem(locals, name);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    return value;
}

/* ``frame.f_locals.get(name)`` for an argument: read from the interpreter frame where the
 * capability table allows (capabilities.frame_get_var), else from ``locals``. */
static PyObject *
argument_value(Core *self, PyFrameObject *frame, PyObject *locals, PyObject *name)
{
    if (locals != NULL) {
        return local_value(locals, name);
    }
    PyObject *value = PyFrame_GetVar(frame, name);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_NameError)) {
        PyErr_Clear();  /* unbound: f_locals has no entry */
        return Py_NewRef(Py_None);
    }
    return value;
}

/* The frame object of ``frame``, which must be the running one (borrowed): made only where
 * the core hands an event to Python or reads what the interpreter frame does not say plainly. */
static PyFrameObject *
frame_object(IFrame *frame)
{
    PyFrameObject *made = PyEval_GetFrame();
    if (made == NULL || made->f_frame != frame) {
        PyErr_SetString(PyExc_RuntimeError, "the event's frame is not the running frame");
        return NULL;
    }
    return made;
}

/* An argument read straight from the interpreter frame's slot ``index``, as PyFrame_GetVar
 * reads it: 1 with a new reference in ``out`` (None when unbound), 0 when this is not a plain
 * local of that name (a cell, a name elsewhere), where the frame object's path decides. */
static int
iframe_argument(IFrame *frame, Py_ssize_t index, PyObject *name, PyObject **out)
{
    PyCodeObject *code = iframe_code(frame);
    if (index < 0 || index >= code->co_nlocalsplus ||
        PyTuple_GET_ITEM(code->co_localsplusnames, index) != name ||
        _PyLocals_GetKind(code->co_localspluskinds, (int)index) != CO_FAST_LOCAL) {
        return 0;
    }
#if PY_VERSION_HEX < 0x030D0000
    if (frame->stacktop == 0) {  /* 3.12's PyFrame_GetVar reads nothing from such a frame */
        return 0;
    }
#endif
    PyObject *value = frame->localsplus[index];
    *out = Py_NewRef(value == NULL ? Py_None : value);
    return 1;
}

/* Where the arguments ``names`` start among the frame's slots: they are the code's
 * ``co_varnames`` after the receiver (contract._argument_names), at most two left out. */
static Py_ssize_t
arguments_start(IFrame *frame, PyObject *names)
{
    PyCodeObject *code = iframe_code(frame);
    PyObject *first = PyTuple_GET_ITEM(names, 0);
    for (Py_ssize_t i = 0; i < 3 && i < code->co_nlocalsplus; i++) {
        if (PyTuple_GET_ITEM(code->co_localsplusnames, i) == first) {
            return i;
        }
    }
    return -1;
}

static void clear_arg_entry(ArgEntry *entry);

static void
forget_arguments(Core *self)
{
    if (self->arg_cache != NULL && self->args_filled) {
        for (int i = 0; i < ARG_CACHE_SIZE; i++) {
            clear_arg_entry(&self->arg_cache[i]);
        }
    }
    self->args_filled = 0;
}

/* The pair that Tracer._record_args adds for these labels and summaries: ``labels[0] + shape``
 * and the canonical form for one argument; else the labelled shapes joined by
 * ARG_SHAPE_SEPARATOR, and the canonical forms joined by ARG_CANON_SEPARATOR when every
 * argument has one (else None). */
static PyObject *
argument_pair(Core *self, PyObject *labels, PyObject **summaries, Py_ssize_t n)
{
    if (n == 1) {
        PyObject *shape = PyUnicode_Concat(PyTuple_GET_ITEM(labels, 0),
                                           PyTuple_GET_ITEM(summaries[0], 0));
        if (shape == NULL) {
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, shape, PyTuple_GET_ITEM(summaries[0], 1));
        Py_DECREF(shape);
        return pair;
    }
    PyObject *shapes = PyTuple_New(n);
    if (shapes == NULL) {
        return NULL;
    }
    Py_ssize_t complete = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *shape = PyUnicode_Concat(PyTuple_GET_ITEM(labels, i),
                                           PyTuple_GET_ITEM(summaries[i], 0));
        if (shape == NULL) {
            Py_DECREF(shapes);
            return NULL;
        }
        PyTuple_SET_ITEM(shapes, i, shape);
        complete += PyTuple_GET_ITEM(summaries[i], 1) != Py_None;
    }
    PyObject *shape = PyUnicode_Join(self->comma, shapes);
    Py_DECREF(shapes);
    if (shape == NULL) {
        return NULL;
    }
    PyObject *canon;
    if (complete == n) {
        PyObject *canons = PyTuple_New(n);
        if (canons == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyTuple_SET_ITEM(canons, i, Py_NewRef(PyTuple_GET_ITEM(summaries[i], 1)));
        }
        canon = PyObject_CallOneArg(self->bytes_join, canons);
        Py_DECREF(canons);
    }
    else {
        canon = Py_NewRef(Py_None);
    }
    PyObject *pair = canon == NULL ? NULL : PyTuple_Pack(2, shape, canon);
    Py_DECREF(shape);
    Py_XDECREF(canon);
    return pair;
}

static size_t
arg_cache_index(PyObject *info, PyObject **summaries, Py_ssize_t n)
{
    size_t h = (size_t)info >> 4;
    for (Py_ssize_t i = 0; i < n; i++) {
        h = h * 1000003u ^ ((size_t)summaries[i] >> 4);
    }
    return (h ^ (h >> 17)) & (ARG_CACHE_SIZE - 1);
}

/* Borrowed pair made earlier for this code object's labels and these very summaries (each
 * entry holds them, so their addresses are not reused), or NULL. */
static PyObject *
cached_arguments(Core *self, PyObject *info, PyObject **summaries, Py_ssize_t n, size_t index)
{
    ArgEntry *entry = &self->arg_cache[index];
    if (entry->info != info || entry->n != n) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (entry->summaries[i] != summaries[i]) {
            return NULL;
        }
    }
    return entry->pair;
}

static void
clear_arg_entry(ArgEntry *entry)
{
    Py_CLEAR(entry->info);
    for (Py_ssize_t i = 0; i < ARG_CACHE_ARGS; i++) {
        Py_CLEAR(entry->summaries[i]);
    }
    Py_CLEAR(entry->pair);
    entry->n = 0;
}

/* Keeps the pair when every summary is also held elsewhere (the core's tables and memo
 * copies, values.py's caches): a summary made for this call alone will not come again. */
static void
keep_arguments(Core *self, PyObject *info, PyObject **summaries, Py_ssize_t n, size_t index,
               PyObject *pair)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_REFCNT(summaries[i]) < 2) {
            return;
        }
    }
    ArgEntry *entry = &self->arg_cache[index];
    clear_arg_entry(entry);
    self->args_filled = 1;
    entry->info = Py_NewRef(info);
    for (Py_ssize_t i = 0; i < n; i++) {
        entry->summaries[i] = Py_NewRef(summaries[i]);
    }
    entry->n = n;
    entry->pair = Py_NewRef(pair);
}

/* Tracer._record_args for values already read, by the general path: each value's summary,
 * the pair made of them (kept in the argument cache when ``info`` is given) and add_pair. */
static int
general_args(Core *self, PyObject *bounded, PyObject *info, PyObject *labels,
             PyObject *const *values, Py_ssize_t n)
{
    PyObject *few[ARG_CACHE_ARGS];
    PyObject **summaries = n <= ARG_CACHE_ARGS ? few : PyMem_Calloc(n, sizeof(PyObject *));
    int rc = -1;
    Py_ssize_t got = 0;
    if (summaries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (; got < n; got++) {
        PyObject *summary = summarize(self, values[got]);
        if (summary == NULL) {
            goto done;
        }
        if (!PyTuple_CheckExact(summary) || PyTuple_GET_SIZE(summary) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(summary, 0))) {
            Py_DECREF(summary);
            PyErr_SetString(PyExc_TypeError, "a summary is a pair");
            goto done;
        }
        summaries[got] = summary;
    }
    if (n <= ARG_CACHE_ARGS && info != NULL) {
        size_t index = arg_cache_index(info, summaries, n);
        PyObject *pair = cached_arguments(self, info, summaries, n, index);
        if (pair != NULL) {
            Py_INCREF(pair);
        }
        else {
            pair = argument_pair(self, labels, summaries, n);
            if (pair != NULL) {
                keep_arguments(self, info, summaries, n, index, pair);
            }
        }
        if (pair != NULL) {
            rc = add_pair(self, bounded, pair);
            Py_DECREF(pair);
        }
    }
    else {
        PyObject *pair = argument_pair(self, labels, summaries, n);
        if (pair != NULL) {
            rc = add_pair(self, bounded, pair);
            Py_DECREF(pair);
        }
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) {
        Py_DECREF(summaries[i]);
    }
    if (summaries != few) {
        PyMem_Free(summaries);
    }
    return rc;
}

/* Tracer._record_args: the arguments read once, then the allocation-free path (fast_add) or,
 * for what it does not take, the general one. */
static int
record_args(Core *self, PyObject *node, PyObject *info, IFrame *iframe)
{
    PyObject *labels = SLOT(info, self->i_arg_labels);
    PyObject *names = SLOT(info, self->i_argnames);
    PyObject *bounded = SLOT(node, self->n_args);
    if (labels == NULL || names == NULL || bounded == NULL || !PyTuple_CheckExact(labels) ||
        !PyTuple_CheckExact(names) || PyTuple_GET_SIZE(labels) != PyTuple_GET_SIZE(names)) {
        PyErr_SetString(PyExc_TypeError, "argument names and labels disagree");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(labels);
    if (n == 0) {
        return 0;
    }
    Py_ssize_t start = self->frame_get_var ? arguments_start(iframe, names) : -1;
    PyFrameObject *frame = NULL;  /* made only when a slot is not a plain local */
    PyObject *locals = NULL;
    PyObject *few[ARG_CACHE_ARGS];
    PyObject **values = n <= ARG_CACHE_ARGS ? few : PyMem_Calloc(n, sizeof(PyObject *));
    int rc = -1;
    Py_ssize_t got = 0;
    if (values == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++) {
        PyObject *name = PyTuple_GET_ITEM(names, got);
        if (start >= 0 && iframe_argument(iframe, start + got, name, &values[got])) {
            continue;
        }
        if (frame == NULL) {
            frame = frame_object(iframe);
            if (frame == NULL) {
                goto done;
            }
            if (!self->frame_get_var) {
                locals = PyFrame_GetLocals(frame);
                if (locals == NULL) {
                    goto done;
                }
            }
        }
        values[got] = argument_value(self, frame, locals, name);
        if (values[got] == NULL) {
            goto done;
        }
    }
    rc = fast_add(self, bounded, labels, values, n, 0);
    if (rc == 0) {
        rc = general_args(self, bounded, info, labels, values, n);
    }
    else if (rc > 0) {
        rc = 0;
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) {
        Py_DECREF(values[i]);
    }
    if (values != few) {
        PyMem_Free(values);
    }
    Py_XDECREF(locals);
    return rc;
}

/* The results' add_pair of ``value`` (``shape_only``: CodeInfo.salted_results, the shape
 * alone): the allocation-free path, else its summary. */
static int
record_result(Core *self, PyObject *bounded, PyObject *value, int shape_only)
{
    int fast = fast_add(self, bounded, NULL, &value, 1, shape_only);
    if (fast != 0) {
        return fast < 0 ? -1 : 0;
    }
    PyObject *summary = summarize(self, value);
    if (summary == NULL) {
        return -1;
    }
    if (shape_only) {
        if (!PyTuple_CheckExact(summary) || PyTuple_GET_SIZE(summary) != 2) {
            Py_DECREF(summary);
            PyErr_SetString(PyExc_TypeError, "a summary is a pair");
            return -1;
        }
        PyObject *shape_pair = PyTuple_Pack(2, PyTuple_GET_ITEM(summary, 0), Py_None);
        Py_DECREF(summary);
        if (shape_pair == NULL) {
            return -1;
        }
        summary = shape_pair;
    }
    int rc = add_pair(self, bounded, summary);
    Py_DECREF(summary);
    return rc;
}

/* StateSet.add */
static int
add_fact(Core *self, PyObject *state, PyObject *facts, Py_ssize_t limit, PyObject *fact)
{
    int present = PySet_Contains(facts, fact);
    if (present) {
        return present < 0 ? -1 : 0;
    }
    if (PySet_GET_SIZE(facts) < limit) {
        return PySet_Add(facts, fact);
    }
    return increment(state, self->s_overflow);
}

/* tracer._is_code_like: functions, builtins, modules and classes read as globals are code. */
static int
code_like(PyObject *value)
{
    PyTypeObject *kind = Py_TYPE(value);
    return kind == &PyFunction_Type || kind == &PyCFunction_Type || kind == &PyModule_Type ||
           PyType_IsSubtype(kind, &PyType_Type);
}

/* One fact ``(when, label, bucket(value))`` into the state set; ``value`` NULL: absent. */
static int
add_value_fact(Core *self, PyObject *state, PyObject *facts, Py_ssize_t room, PyObject *when,
               PyObject *label, PyObject *value)
{
    PyObject *bucket;
    if (value == NULL) {
        bucket = Py_NewRef(self->bucket_names[BK_ABSENT]);
    }
    else {
        Py_INCREF(value);
        bucket = state_bucket(self, value);
        Py_DECREF(value);
        if (bucket == NULL) {
            return -1;
        }
    }
    PyObject *fact = PyTuple_Pack(3, when, label, bucket);
    Py_DECREF(bucket);
    if (fact == NULL) {
        return -1;
    }
    int rc = add_fact(self, state, facts, room, fact);
    Py_DECREF(fact);
    return rc;
}

/* reflect.class_dict's test, remembered as it remembers it (reflect._STR_KEYED): whether the
 * namespace ``ns`` of ``klass`` holds only exact-str keys, so that looking a str up in it runs
 * no user code. 1 or 0; -1 on failure. */
static int
str_keyed(Core *self, PyObject *klass, PyObject *ns)
{
    PyObject *key = id_key(self, klass);
    if (key == NULL) {
        return -1;
    }
    PyObject *known = PyDict_GetItemWithError(self->str_keyed, key);
    if (known == klass || (known == NULL && PyErr_Occurred())) {
        Py_DECREF(key);
        return known == klass ? 1 : -1;
    }
    Py_ssize_t pos = 0;
    PyObject *name, *ignored;
    while (PyDict_Next(ns, &pos, &name, &ignored)) {
        if (!PyUnicode_CheckExact(name)) {
            Py_DECREF(key);
            return 0;
        }
    }
    if (PyDict_GET_SIZE(self->str_keyed) >= self->str_keyed_max) {
        PyDict_Clear(self->str_keyed);
    }
    int rc = PyDict_SetItem(self->str_keyed, key, klass);
    Py_DECREF(key);
    return rc < 0 ? -1 : 1;
}

/* reflect.class_dicts(kind) as Tracer._record_state asks it, for a class of the usual form
 * (a heap type, an MRO tuple of types, dict namespaces): 1 when every namespace of its MRO
 * is readable, 0 when one is not (class_dicts gives None: its attributes read as absent), 2
 * when only the Python method may tell, -1 on failure. */
static int
namespaces_readable(Core *self, PyTypeObject *kind)
{
    PyObject *mro = kind->tp_mro;
    if (!(kind->tp_flags & Py_TPFLAGS_HEAPTYPE) || mro == NULL || !PyTuple_CheckExact(mro)) {
        return 2;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *klass = PyTuple_GET_ITEM(mro, i);
        if (!PyType_Check(klass)) {
            return 2;
        }
        PyObject *ns = PyType_GetDict((PyTypeObject *)klass);
        if (ns == NULL || !PyDict_CheckExact(ns)) {
            Py_XDECREF(ns);
            return PyErr_Occurred() ? -1 : 2;
        }
        int rc = str_keyed(self, klass, ns);
        Py_DECREF(ns);
        if (rc <= 0) {
            return rc;
        }
    }
    return 1;
}

/* reflect.lookup(class_dicts(kind), name) is not MISSING, once namespaces_readable said 1:
 * 1 or 0; -1 on failure. Every namespace holds only exact-str keys and ``name`` is an exact
 * str, so no lookup runs user code. */
static int
class_holds(PyTypeObject *kind, PyObject *name)
{
    PyObject *mro = kind->tp_mro;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *ns = PyType_GetDict((PyTypeObject *)PyTuple_GET_ITEM(mro, i));
        if (ns == NULL) {
            return -1;
        }
        int held = PyDict_Contains(ns, name);
        Py_DECREF(ns);
        if (held) {
            return held;
        }
    }
    return 0;
}

/* A receiver's attributes one method reads at most, for record_state_fast's pre-pass (more:
 * the Python method). */
#define MAX_SELF_ATTRS 64

/* Where a receiver's attribute was found: on the instance, on its class, nowhere. */
enum { ATTR_ABSENT, ATTR_HELD, ATTR_CLASS };

/* Tracer._record_state once its code object's globals are decided: 1 when done, 0 when the
 * Python method must do it (globals not yet decided, a receiver's class reflect's memo does
 * not know yet, anything unusual), -1 on failure. Everything that could send it to Python is
 * checked before the first fact is added. */
static int
record_state_fast(Core *self, PyObject *node, PyObject *info, IFrame *frame,
                  PyObject *when)
{
    PyObject *state = SLOT(node, self->n_state);
    PyObject *names = SLOT(info, self->i_state_globals);
    PyObject *global_labels = SLOT(info, self->i_global_labels);
    PyObject *attrs = SLOT(info, self->i_self_attrs);
    PyObject *labels = SLOT(info, self->i_self_labels);
    PyObject *receiver = SLOT(info, self->i_receiver);
    if (state == NULL || names == NULL || global_labels == NULL ||
        attrs == NULL || labels == NULL || receiver == NULL || !PyTuple_CheckExact(names) ||
        !PyTuple_CheckExact(global_labels) ||
        PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(global_labels) ||
        !PyTuple_CheckExact(attrs) || !PyTuple_CheckExact(labels) ||
        PyTuple_GET_SIZE(attrs) != PyTuple_GET_SIZE(labels) ||
        (receiver != Py_None && !PyUnicode_CheckExact(receiver))) {
        return 0;
    }
    int reads_self = PyTuple_GET_SIZE(attrs) && receiver != Py_None;
    PyObject *fields = NULL;
    char where[MAX_SELF_ATTRS];
    if (reads_self) {
        if (PyTuple_GET_SIZE(attrs) > MAX_SELF_ATTRS) {
            return 0;
        }
        /* As Tracer._record_state reads it, frame.f_locals.get(receiver), from the
         * receiver's slot (the first); anything else is the Python method's. */
        PyObject *value;
        if (!self->frame_get_var || !iframe_argument(frame, 0, receiver, &value)) {
            return 0;
        }
        fields = instance_fields(self, value);
        if (fields == NULL) {
            Py_DECREF(value);
            return PyErr_Occurred() ? -1 : 0;
        }
        /* An attribute the instance does not hold is its class's (``class attribute``: a
         * method, a constant) when a namespace of its MRO holds it, read as reflect reads
         * the class dicts, so both cores say the same; else it is absent. Decided here,
         * before the first fact is added. */
        int readable = -2;  /* the class dicts, not read yet */
        for (Py_ssize_t i = 0; fields != Py_None && i < PyTuple_GET_SIZE(attrs); i++) {
            PyObject *attr = PyTuple_GET_ITEM(attrs, i);
            int held = PyUnicode_CheckExact(attr) ? PyDict_Contains(fields, attr) : -2;
            if (held == 0 && readable == -2) {
                readable = namespaces_readable(self, Py_TYPE(value));
            }
            if (held == 0 && readable == 1) {
                held = class_holds(Py_TYPE(value), attr);
                held = held > 0 ? ATTR_CLASS : held;
            }
            else if (held == 0 && readable != 0) {
                held = readable < 0 ? -1 : -2;
            }
            if (held < 0) {
                Py_DECREF(fields);
                Py_DECREF(value);
                return held == -1 ? -1 : 0;
            }
            where[i] = (char)held;
        }
        Py_DECREF(value);
    }
    PyObject *module_globals = PyTuple_GET_SIZE(names) ? Py_XNewRef(frame->f_globals) : NULL;
    int rc = 1;
    if (module_globals != NULL && !PyDict_CheckExact(module_globals)) {
        rc = 0;
        goto done;
    }
    if (state == Py_None) {  /* node.state = StateSet(bounds.state) */
        PyObject *made = PyObject_CallOneArg(self->state_type, self->state_limit);
        if (made == NULL) {
            rc = -1;
            goto done;
        }
        if (Py_TYPE(made) != (PyTypeObject *)self->state_type) {
            Py_DECREF(made);
            PyErr_SetString(PyExc_TypeError, "a state set was expected");
            rc = -1;
            goto done;
        }
        Py_SETREF(SLOT(node, self->n_state), made);
        state = made;
    }
    if (Py_TYPE(state) != (PyTypeObject *)self->state_type) {
        rc = 0;
        goto done;
    }
    Py_INCREF(state);
    PyObject *facts = SLOT(state, self->s_facts);
    PyObject *limit = SLOT(state, self->s_limit);
    Py_ssize_t room = -1;
    if (facts == NULL || limit == NULL || !PySet_CheckExact(facts) || !PyLong_CheckExact(limit) ||
        ((room = PyLong_AsSsize_t(limit)) == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        Py_DECREF(state);
        rc = 0;  /* nothing added yet: the Python method tells */
        goto done;
    }
    Py_INCREF(facts);
    if (fields != NULL && fields != Py_None) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(attrs) && rc == 1; i++) {
            PyObject *label = PyTuple_GET_ITEM(labels, i);
            if (where[i] == ATTR_CLASS) {
                PyObject *fact = PyTuple_Pack(3, when, label, self->class_attribute);
                if (fact == NULL || add_fact(self, state, facts, room, fact) < 0) {
                    rc = -1;
                }
                Py_XDECREF(fact);
                continue;
            }
            PyObject *item = where[i] == ATTR_HELD
                                 ? PyDict_GetItemWithError(fields, PyTuple_GET_ITEM(attrs, i))
                                 : NULL;
            if ((item == NULL && PyErr_Occurred()) ||
                add_value_fact(self, state, facts, room, when, label, item) < 0) {
                rc = -1;
            }
        }
    }
    for (Py_ssize_t i = 0; module_globals != NULL && i < PyTuple_GET_SIZE(names) && rc == 1;
         i++) {
        PyObject *value = PyDict_GetItemWithError(module_globals, PyTuple_GET_ITEM(names, i));
        if (value == NULL) {
            if (PyErr_Occurred()) {
                rc = -1;
            }
            continue;
        }
        if (code_like(value)) {
            continue;
        }
        if (add_value_fact(self, state, facts, room, when, PyTuple_GET_ITEM(global_labels, i),
                           value) < 0) {
            rc = -1;
        }
    }
    Py_DECREF(facts);
    Py_DECREF(state);
done:
    Py_XDECREF(module_globals);
    Py_XDECREF(fields);
    return rc;
}

static int
record_state(Core *self, PyObject *node, PyObject *info, IFrame *iframe, PyObject *when)
{
    int done = record_state_fast(self, node, info, iframe, when);
    if (done) {
        return done < 0 ? -1 : 0;
    }
    PyFrameObject *frame = frame_object(iframe);
    if (frame == NULL) {
        return -1;
    }
    PyObject *args[4] = {node, info, (PyObject *)frame, when};
    PyObject *result = PyObject_Vectorcall(self->record_state, args, 4, NULL);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* The node an in-scope frame starting or resuming hangs under (Tracer._parent_of from its
 * caller): the nearest frame up the chain that is active and is what its node says it is,
 * within FAST_PARENT_DEPTH frames. NULL (no error) otherwise: the Python callback then decides
 * (tasks, threads' roots, stand-in frames, anything unusual). Borrowed: the active table holds
 * it. */
static PyObject *
fast_parent(Core *self, IFrame *frame)
{
    if (PyDict_GET_SIZE(self->task_frames)) {
        return NULL;
    }
    IFrame *back = iframe_back(frame);
    for (int depth = 0; back != NULL && depth < FAST_PARENT_DEPTH; depth++) {
        PyObject *parent = get_by_id(self, self->active, back);
        if (parent != NULL) {
            if (Py_TYPE(parent) != (PyTypeObject *)self->node_type) {
                break;
            }
            PyObject *ntype = SLOT(parent, self->n_ntype);
            PyObject *key = SLOT(parent, self->n_key);
            if (ntype == NULL || key == NULL || !PyLong_CheckExact(ntype)) {
                break;
            }
            long kind = PyLong_AsLong(ntype);
            if (kind == -1 && PyErr_Occurred()) {
                break;
            }
            if (kind != self->node_call || key == Py_None) {
                return parent;
            }
            if (Py_TYPE(key) != (PyTypeObject *)self->info_type) {
                break;
            }
            if ((PyObject *)iframe_code(back) == SLOT(key, self->i_code)) {
                return parent;
            }
        }
        else if (PyErr_Occurred()) {
            break;
        }
        back = iframe_back(back);
    }
    return NULL;
}

static PyObject *
fast_child(Core *self, PyObject *parent, PyObject *info)
{
    PyObject *children = SLOT(parent, self->n_children);
    if (children == NULL || !PyDict_CheckExact(children)) {
        return NULL;
    }
    PyObject *node = PyDict_GetItemWithError(children, info);
    if (node == NULL || Py_TYPE(node) != (PyTypeObject *)self->node_type) {
        return NULL;
    }
    return node;
}

/* Tracer.child(parent, NODE_CALL, info), as the Python callbacks make a call's node the tree
 * does not hold yet (within the node bound, else the sink). Borrowed: the parent's children
 * or the tracer's sink hold it. NULL with an error on failure. */
static PyObject *
new_child(Core *self, PyObject *parent, PyObject *info)
{
    PyObject *args[3] = {parent, self->node_call_obj, info};
    PyObject *made = PyObject_Vectorcall(self->make_child, args, 3, NULL);
    if (made == NULL) {
        return NULL;
    }
    if (Py_TYPE(made) != (PyTypeObject *)self->node_type) {
        Py_DECREF(made);
        PyErr_SetString(PyExc_TypeError, "tracer.child did not make a Node");
        return NULL;
    }
    Py_DECREF(made);
    return made;
}

/* The tree node of the frame an event is about, as a new reference: taken out of the active
 * map when the frame's step ends (``pop``), else only looked up. NULL without an error when the
 * frame has none, NULL with one on failure. */
static PyObject *
event_node(Core *self, int pop, IFrame **frame_out)
{
    IFrame *frame = current_iframe();
    *frame_out = frame;
    if (frame == NULL) {
        return NULL;
    }
    PyObject *node =
        pop ? pop_by_id(self, self->active, frame)
            : Py_XNewRef(get_by_id(self, self->active, frame));
    if (node != NULL && Py_TYPE(node) != (PyTypeObject *)self->node_type) {
        Py_DECREF(node);
        PyErr_SetString(PyExc_TypeError, "an active frame's node is not a Node");
        return NULL;
    }
    return node;
}

static PyObject *
Core_on_start(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        Py_RETURN_NONE;
    }
    PyObject *info = code_info(self, args[0]);
    if (info == NULL) {
        if (PyErr_Occurred()) {
            return failed(self);
        }
        return PyObject_Vectorcall(self->py_start, args, nargs, NULL);
    }
    if (info == Py_None) {
        return Py_NewRef(self->disable);
    }
    if (!self->recording) {
        Py_RETURN_NONE;
    }
    if (Py_TYPE(info) != (PyTypeObject *)self->info_type ||
        SLOT(info, self->i_is_test) != Py_False) {
        return PyObject_Vectorcall(self->py_start, args, nargs, NULL);
    }
    IFrame *frame = current_iframe();
    if (frame == NULL || (PyObject *)iframe_code(frame) != args[0]) {
        return PyObject_Vectorcall(self->py_start, args, nargs, NULL);
    }
    PyObject *parent = fast_parent(self, frame);
    PyObject *node = parent == NULL ? NULL : fast_child(self, parent, info);
    if (node == NULL && parent != NULL && !PyErr_Occurred()) {
        node = new_child(self, parent, info);
    }
    if (node == NULL) {
        if (PyErr_Occurred()) {
            return failed(self);
        }
        return PyObject_Vectorcall(self->py_start, args, nargs, NULL);
    }
    Py_INCREF(node);
    Py_INCREF(info);
    PyObject *result = NULL;
    if (increment(node, self->n_count) < 0 || set_by_id(self, self->active, frame, node) < 0) {
        goto error;
    }
    PyObject *names = SLOT(info, self->i_argnames);
    if (names == NULL || !PyTuple_CheckExact(names)) {
        PyErr_SetString(PyExc_TypeError, "argnames is not a tuple");
        goto error;
    }
    if (PyTuple_GET_SIZE(names) && record_args(self, node, info, frame) < 0) {
        goto error;
    }
    PyObject *has_state = SLOT(info, self->i_has_state);
    if (has_state == Py_True && record_state(self, node, info, frame, self->str_entry) < 0) {
        goto error;
    }
    result = Py_NewRef(Py_None);
    goto done;
error:
    result = failed(self);
done:
    Py_DECREF(node);
    Py_DECREF(info);
    return result;
}

static PyObject *
Core_on_resume(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        Py_RETURN_NONE;
    }
    PyObject *info = code_info(self, args[0]);
    if (info == NULL && PyErr_Occurred()) {
        return failed(self);
    }
    if (info == NULL || info == Py_None || !self->recording) {
        Py_RETURN_NONE;
    }
    IFrame *frame = current_iframe();
    if (frame == NULL || (PyObject *)iframe_code(frame) != args[0]) {
        return PyObject_Vectorcall(self->py_resume, args, nargs, NULL);
    }
    PyObject *parent = fast_parent(self, frame);
    PyObject *node = parent == NULL ? NULL : fast_child(self, parent, info);
    if (node == NULL && parent != NULL && !PyErr_Occurred()) {
        node = new_child(self, parent, info);
    }
    if (node == NULL) {
        if (PyErr_Occurred()) {
            return failed(self);
        }
        return PyObject_Vectorcall(self->py_resume, args, nargs, NULL);
    }
    Py_INCREF(node);
    int rc = increment(node, self->n_count);
    if (rc == 0) {
        rc = set_by_id(self, self->active, frame, node);
    }
    Py_DECREF(node);
    if (rc < 0) {
        return failed(self);
    }
    Py_RETURN_NONE;
}

static PyObject *
Core_on_return(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || !self->recording) {
        Py_RETURN_NONE;
    }
    IFrame *frame;
    PyObject *node = event_node(self, 1, &frame);
    if (node == NULL) {
        return PyErr_Occurred() ? failed(self) : Py_NewRef(Py_None);
    }
    PyObject *result = NULL;
    PyObject *info = SLOT(node, self->n_key);
    PyObject *ntype = SLOT(node, self->n_ntype);
    if (info == NULL || ntype == NULL) {
        PyErr_SetString(PyExc_AttributeError, "node slots are not set");
        goto error;
    }
    Py_INCREF(info);
    if (info == Py_None) {
        goto none;
    }
    long kind = PyLong_AsLong(ntype);
    if (kind == -1 && PyErr_Occurred()) {
        goto error;
    }
    if (kind != self->node_call) {
        if (increment(node, self->n_returned) < 0) {
            goto error;
        }
        goto none;
    }
    if (Py_TYPE(info) != (PyTypeObject *)self->info_type) {
        PyErr_SetString(PyExc_TypeError, "a call node's key is not a CodeInfo");
        goto error;
    }
    if (SLOT(info, self->i_code) != args[0]) {
        goto none;
    }
    if (increment(node, self->n_returned) < 0) {
        goto error;
    }
    PyObject *bounded = SLOT(node, self->n_results);
    if (bounded == NULL) {
        PyErr_SetString(PyExc_AttributeError, "results slot is not set");
        goto error;
    }
    if (record_result(self, bounded, args[2], SLOT(info, self->i_salted) == Py_True) < 0) {
        goto error;
    }
    if (SLOT(info, self->i_has_state) == Py_True &&
        record_state(self, node, info, frame, self->str_exit) < 0) {
        goto error;
    }
none:
    result = Py_NewRef(Py_None);
    goto done;
error:
    result = failed(self);
done:
    Py_XDECREF(info);
    Py_DECREF(node);
    return result;
}

static PyObject *
Core_on_yield(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!self->recording) {
        Py_RETURN_NONE;
    }
    IFrame *frame;
    PyObject *node = event_node(self, 1, &frame);
    if (node == NULL) {
        return PyErr_Occurred() ? failed(self) : Py_NewRef(Py_None);
    }
    int rc = increment(node, self->n_yielded);
    Py_DECREF(node);
    if (rc < 0) {
        return failed(self);
    }
    Py_RETURN_NONE;
}

static PyObject *
Core_on_branch(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3) {
        Py_RETURN_NONE;
    }
    PyObject *info = code_info(self, args[0]);
    if (info == NULL && PyErr_Occurred()) {
        return failed(self);
    }
    if (info == NULL || info == Py_None) {
        return Py_NewRef(self->disable);
    }
    if (Py_TYPE(info) != (PyTypeObject *)self->info_type) {
        return PyObject_Vectorcall(self->py_branch, args, nargs, NULL);
    }
    PyObject *cache = SLOT(info, self->i_branch_cache);
    long long src = PyLong_AsLongLong(args[1]);
    long long dest = PyLong_AsLongLong(args[2]);
    if (cache == NULL || !PyDict_CheckExact(cache) || src < 0 || dest < 0 ||
        dest >= (1LL << self->branch_shift) || src >= (1LL << (62 - self->branch_shift))) {
        if (PyErr_Occurred()) {
            return failed(self);
        }
        return PyObject_Vectorcall(self->py_branch, args, nargs, NULL);
    }
    long long key = (src << self->branch_shift) | dest;
    /* info.branch_cache's entries are made once and never replaced, and infos are kept alive
     * with their code objects (see code_info): a copy of an entry, by info and key, with the
     * outcome object that dict holds, stays right. */
    size_t slot = (((size_t)info >> 4) * 31u + (size_t)key * 2654435761u) & (BRANCH_CACHE_SIZE - 1);
    PyObject *outcome;
    long value;
    if (self->branch_cache[slot].info == info && self->branch_cache[slot].key == key) {
        outcome = self->branch_cache[slot].outcome;
        value = self->branch_cache[slot].value;
    }
    else {
        PyObject *pair = PyLong_FromLongLong(key);
        if (pair == NULL) {
            return failed(self);
        }
        outcome = PyDict_GetItemWithError(cache, pair);
        Py_DECREF(pair);
        if (outcome == NULL) {
            if (PyErr_Occurred()) {
                return failed(self);
            }
            return PyObject_Vectorcall(self->py_branch, args, nargs, NULL);
        }
        value = PyLong_AsLong(outcome);
        if (value == -1 && PyErr_Occurred()) {
            return failed(self);
        }
        self->branch_cache[slot].info = info;
        self->branch_cache[slot].key = key;
        self->branch_cache[slot].outcome = outcome;
        self->branch_cache[slot].value = value;
    }
    if (value < 0) {
        return value == self->no_decision ? Py_NewRef(self->disable) : Py_NewRef(Py_None);
    }
    if (!self->recording) {
        Py_RETURN_NONE;
    }
    IFrame *frame;
    PyObject *node = event_node(self, 0, &frame);
    if (node == NULL) {
        return PyErr_Occurred() ? failed(self) : Py_NewRef(Py_None);
    }
    PyObject *branches = SLOT(node, self->n_branches);
    if (branches == NULL || !PyDict_CheckExact(branches)) {
        Py_DECREF(node);
        PyErr_SetString(PyExc_TypeError, "branches is not a dict");
        return failed(self);
    }
    Py_INCREF(branches);
    Py_DECREF(node);  /* the dict is held on its own from here */
    Py_INCREF(outcome);
    PyObject *seen = PyDict_GetItemWithError(branches, outcome);
    PyObject *count = NULL;
    if (seen != NULL) {
        count = PyNumber_Add(seen, one);
    }
    else if (!PyErr_Occurred()) {
        count = Py_NewRef(one);
    }
    int rc = count == NULL ? -1 : PyDict_SetItem(branches, outcome, count);
    Py_XDECREF(count);
    Py_DECREF(outcome);
    Py_DECREF(branches);
    if (rc < 0) {
        return failed(self);
    }
    Py_RETURN_NONE;
}

static int
Core_init(Core *self, PyObject *args, PyObject *kwargs)
{
    PyObject *tracer, *codes, *active, *task_frames, *py_start, *py_resume, *py_branch;
    PyObject *record_state, *summarize, *disable, *on_error;
    PyObject *node_type, *info_type, *bounded_type, *blake2b, *str_markers;
    PyObject *tempfile_names, *tempfile_name_bits, *plain_summaries, *class_epoch;
    PyObject *state_entry, *state_exit, *shape_sep, *canon_sep, *shape_tag, *canon_tag;
    PyObject *none_summary;
    int max_depth, max_items, max_bytes, max_shape, shape_items0, shape_items1, max_union;
    int frame_get_var = 0;
    PyObject *display_names, *dict_descriptors, *state_type, *state_limit, *bucket, *enum_type;
    PyObject *str_keyed, *class_attribute;
    Py_ssize_t str_keyed_max;
    long node_call, no_decision, small_int;
    Py_ssize_t short_str;
    int branch_shift, digest_size, name_length, name_base, name_bits;
    static char *names[] = {"tracer", "codes", "active", "task_frames", "on_start",
                            "on_resume", "on_branch", "record_state", "summarize",
                            "disable", "node_type", "info_type", "bounded_type", "blake2b",
                            "str_markers", "tempfile_names", "tempfile_name_bits", "on_error",
                            "node_call", "state_entry", "state_exit", "arg_shape_separator",
                            "arg_canon_separator", "branch_key_shift", "no_decision", "small_int",
                            "short_str", "overflow_tags", "overflow_digest_size",
                            "none_summary", "tempfile_name_hash", "value_bounds", "frame_get_var", "class_tables",
                            "state_type", "state_limit", "bucket", "enum_type", "class_namespaces",
                            NULL};
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OO!O!O!OOOOOOO!O!O!OO!O!O!O$lUUUSilln(SS)iO(iii)(iiii(ii)i)p(O!O!O!O!)O!O!OO(O!nU)", names, &tracer,
            &PyDict_Type, &codes, &PyDict_Type, &active, &PyDict_Type, &task_frames,
            &py_start, &py_resume, &py_branch, &record_state, &summarize, &disable,
            &PyType_Type, &node_type, &PyType_Type, &info_type, &PyType_Type, &bounded_type,
            &blake2b, &PyTuple_Type, &str_markers, &PySet_Type, &tempfile_names,
            &PyByteArray_Type, &tempfile_name_bits, &on_error, &node_call, &state_entry,
            &state_exit, &shape_sep, &canon_sep, &branch_shift, &no_decision, &small_int,
            &short_str, &shape_tag, &canon_tag, &digest_size, &none_summary, &name_length,
            &name_base, &name_bits, &max_depth, &max_items, &max_bytes, &max_shape,
            &shape_items0, &shape_items1, &max_union, &frame_get_var, &PyDict_Type,
            &plain_summaries, &PyDict_Type, &display_names, &PyDict_Type, &dict_descriptors,
            &PyList_Type, &class_epoch, &PyType_Type, &state_type,
            &PyLong_Type, &state_limit, &bucket, &enum_type, &PyDict_Type, &str_keyed,
            &str_keyed_max, &class_attribute)) {
        return -1;
    }
    if (!PyDict_CheckExact(codes) || !PyDict_CheckExact(active) ||
        !PyDict_CheckExact(task_frames)) {
        PyErr_SetString(PyExc_TypeError, "the shared tables must be plain dicts");
        return -1;
    }
    /* What the C arithmetic can hold: the branch key in 62 bits, a small int in a long, the
     * fingerprint as a sum of 8-byte hashes modulo 2**64, a name hash's mask in 32 bits. */
    if (branch_shift < 1 || branch_shift > 61 || small_int < 1 || short_str < 1 ||
        digest_size != 8 || name_length < 1 || name_base < 1 || name_bits < 3 ||
        name_bits > 30 || max_depth < 1 || max_items < 0 || max_items > 64 || max_bytes < 1 ||
        max_bytes > MAX_CANON_BYTES || max_shape < 8 || shape_items0 < 0 ||
        shape_items0 > 16 || shape_items1 < 0 || shape_items1 > 16 || max_union < 1 ||
        max_union > 7) {
        PyErr_SetString(PyExc_ValueError, "an encoding this core cannot follow");
        return -1;
    }
    if (on_error != Py_None && !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "on_error must be None or callable");
        return -1;
    }
    if (slot_offset(node_type, "ntype", &self->n_ntype) < 0 ||
        slot_offset(node_type, "key", &self->n_key) < 0 ||
        slot_offset(node_type, "children", &self->n_children) < 0 ||
        slot_offset(node_type, "count", &self->n_count) < 0 ||
        slot_offset(node_type, "returned", &self->n_returned) < 0 ||
        slot_offset(node_type, "yielded", &self->n_yielded) < 0 ||
        slot_offset(node_type, "args", &self->n_args) < 0 ||
        slot_offset(node_type, "results", &self->n_results) < 0 ||
        slot_offset(node_type, "branches", &self->n_branches) < 0 ||
        slot_offset(info_type, "code", &self->i_code) < 0 ||
        slot_offset(info_type, "is_test", &self->i_is_test) < 0 ||
        slot_offset(info_type, "argnames", &self->i_argnames) < 0 ||
        slot_offset(info_type, "arg_labels", &self->i_arg_labels) < 0 ||
        slot_offset(info_type, "has_state", &self->i_has_state) < 0 ||
        slot_offset(info_type, "salted_results", &self->i_salted) < 0 ||
        slot_offset(info_type, "branch_cache", &self->i_branch_cache) < 0 ||
        slot_offset(bounded_type, "_seen", &self->b_seen) < 0 ||
        slot_offset(bounded_type, "_limit", &self->b_limit) < 0 ||
        slot_offset(bounded_type, "_overflow", &self->b_overflow) < 0 ||
        slot_offset(node_type, "state", &self->n_state) < 0 ||
        slot_offset(info_type, "self_attrs", &self->i_self_attrs) < 0 ||
        slot_offset(info_type, "self_labels", &self->i_self_labels) < 0 ||
        slot_offset(info_type, "receiver", &self->i_receiver) < 0 ||
        slot_offset(info_type, "state_globals", &self->i_state_globals) < 0 ||
        slot_offset(info_type, "global_labels", &self->i_global_labels) < 0 ||
        slot_offset(state_type, "facts", &self->s_facts) < 0 ||
        slot_offset(state_type, "limit", &self->s_limit) < 0 ||
        slot_offset(state_type, "overflow", &self->s_overflow) < 0) {
        return -1;
    }
    PyObject *bytes_join = PyObject_GetAttrString(canon_sep, "join");
    if (bytes_join == NULL) {
        return -1;
    }
    Py_XSETREF(self->bytes_join, bytes_join);
    Py_XSETREF(self->canon_sep, PyBytes_CheckExact(canon_sep) && PyBytes_GET_SIZE(canon_sep) == 1
                                    ? Py_NewRef(canon_sep)
                                    : NULL);
    Py_XSETREF(self->comma, Py_NewRef(shape_sep));
    Py_XSETREF(self->str_digest, PyUnicode_InternFromString("digest"));
    Py_XSETREF(self->str_int, PyUnicode_InternFromString("int"));
    Py_XSETREF(self->str_str, PyUnicode_InternFromString("str"));
    Py_XSETREF(self->blake2b_kwargs, Py_BuildValue("{s:i}", "digest_size", digest_size));
    if (!self->str_digest || !self->str_int || !self->str_str ||
        !self->blake2b_kwargs) {
        return -1;
    }
    Py_XSETREF(self->int_summaries, PyDict_New());
    Py_XSETREF(self->str_summaries, PyDict_New());
    Py_CLEAR(self->bool_summaries[0]);
    Py_CLEAR(self->bool_summaries[1]);
    memset(self->code_cache, 0, sizeof(self->code_cache));
    memset(self->branch_cache, 0, sizeof(self->branch_cache));
    if (!self->int_summaries || !self->str_summaries) {
        return -1;
    }
    Py_XSETREF(self->str_entry, Py_NewRef(state_entry));
    Py_XSETREF(self->str_exit, Py_NewRef(state_exit));
    Py_XSETREF(self->str_errors, PyUnicode_InternFromString("errors"));
    Py_XSETREF(self->str_add_pair, PyUnicode_InternFromString("add_pair"));
    if (!self->str_errors || !self->str_add_pair) {
        return -1;
    }
    Py_XSETREF(self->tracer, Py_NewRef(tracer));
    Py_XSETREF(self->recursion_reason, PyObject_GetAttrString(tracer, "RECURSION_REASON"));
    Py_XSETREF(self->str_reasons, PyUnicode_InternFromString("_reasons"));
    if (self->recursion_reason == NULL || self->str_reasons == NULL) {
        return -1;
    }
    Py_XSETREF(self->make_child, PyObject_GetAttrString(tracer, "child"));
    if (self->make_child == NULL) {
        return -1;
    }
    Py_XSETREF(self->node_call_obj, PyLong_FromLong(node_call));
    if (self->node_call_obj == NULL) {
        return -1;
    }
    Py_XSETREF(self->codes, Py_NewRef(codes));
    Py_XSETREF(self->active, Py_NewRef(active));
    Py_XSETREF(self->task_frames, Py_NewRef(task_frames));
    Py_XSETREF(self->py_start, Py_NewRef(py_start));
    Py_XSETREF(self->py_resume, Py_NewRef(py_resume));
    Py_XSETREF(self->py_branch, Py_NewRef(py_branch));
    Py_XSETREF(self->record_state, Py_NewRef(record_state));
    Py_XSETREF(self->summarize, Py_NewRef(summarize));
    Py_XSETREF(self->none_summary, Py_NewRef(none_summary));
    Py_XSETREF(self->disable, Py_NewRef(disable));
    Py_XSETREF(self->on_error, Py_NewRef(on_error));
    Py_XSETREF(self->node_type, Py_NewRef(node_type));
    Py_XSETREF(self->info_type, Py_NewRef(info_type));
    Py_XSETREF(self->bounded_type, Py_NewRef(bounded_type));
    Py_XSETREF(self->blake2b, Py_NewRef(blake2b));
    Py_XSETREF(self->overflow_shape_tag, Py_NewRef(shape_tag));
    Py_XSETREF(self->overflow_canon_tag, Py_NewRef(canon_tag));
    if (!overflow_hash_agrees(self)) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(str_markers); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(str_markers, i))) {
            PyErr_SetString(PyExc_TypeError, "str_markers must be a tuple of str");
            return -1;
        }
    }
    Py_XSETREF(self->str_markers, Py_NewRef(str_markers));
    Py_XSETREF(self->tempfile_names, Py_NewRef(tempfile_names));
    Py_XSETREF(self->tempfile_name_bits, Py_NewRef(tempfile_name_bits));
    forget_plain(self);
    forget_arguments(self);
    if (self->arg_cache == NULL) {
        self->arg_cache = PyMem_Calloc(ARG_CACHE_SIZE, sizeof(ArgEntry));
        if (self->arg_cache == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_XSETREF(self->plain_summaries, Py_NewRef(plain_summaries));
    Py_XSETREF(self->class_epoch, Py_NewRef(class_epoch));
    Py_XSETREF(self->display_names, Py_NewRef(display_names));
    Py_XSETREF(self->dict_descriptors, Py_NewRef(dict_descriptors));
    Py_XSETREF(self->str_keyed, Py_NewRef(str_keyed));
    Py_XSETREF(self->class_attribute, Py_NewRef(class_attribute));
    self->str_keyed_max = str_keyed_max;
    Py_XSETREF(self->state_type, Py_NewRef(state_type));
    Py_XSETREF(self->state_limit, Py_NewRef(state_limit));
    Py_XSETREF(self->bucket, Py_NewRef(bucket));
    Py_XSETREF(self->enum_type, Py_NewRef(enum_type));
    for (int i = 0; i < BK_COUNT; i++) {
        Py_XSETREF(self->bucket_names[i], PyUnicode_InternFromString(BUCKET_NAMES[i]));
        if (self->bucket_names[i] == NULL) {
            return -1;
        }
    }
    Py_CLEAR(self->plain_epoch);
    self->node_call = node_call;
    self->branch_shift = branch_shift;
    self->no_decision = no_decision;
    self->small_int = small_int;
    self->short_str = short_str;
    self->name_length = name_length;
    self->name_base = (uint32_t)name_base;
    self->name_bits = name_bits;
    self->max_depth = max_depth;
    self->max_items = max_items;
    self->max_bytes = max_bytes;
    self->max_shape = max_shape;
    self->shape_depth = 2;
    self->shape_items[0] = shape_items0;
    self->shape_items[1] = shape_items1;
    self->max_union = max_union;
    self->frame_get_var = (char)frame_get_var;
    static const char *shape_names[SHAPE_NAME_COUNT] = {
        "None", "bool", "int", "float", "str", "bytes", "complex", "bytearray",
        "tuple", "list", "dict", "set", "frozenset"};
    for (int i = 0; i < SHAPE_NAME_COUNT; i++) {
        Py_XSETREF(self->shape_names[i], PyUnicode_InternFromString(shape_names[i]));
        Py_XSETREF(self->shape_elided[i], PyUnicode_FromFormat("%s[...]", shape_names[i]));
        Py_XSETREF(self->shape_empty[i], PyUnicode_FromFormat("%s[]", shape_names[i]));
        if (!self->shape_names[i] || !self->shape_elided[i] || !self->shape_empty[i]) {
            return -1;
        }
    }
    Py_XSETREF(self->str_hex, PyUnicode_InternFromString("hex"));
    Py_XSETREF(self->str_ellipsis, PyUnicode_InternFromString("..."));
    Py_XSETREF(self->str_bar, PyUnicode_InternFromString("|"));
    Py_XSETREF(self->str_comma_tight, PyUnicode_InternFromString(","));
    if (!self->str_hex || !self->str_ellipsis || !self->str_bar || !self->str_comma_tight) {
        return -1;
    }
    self->recording = 0;
    return 0;
}

static int
Core_traverse(Core *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tracer);
    Py_VISIT(self->make_child);
    Py_VISIT(self->recursion_reason);
    Py_VISIT(self->node_call_obj);
    Py_VISIT(self->codes);
    Py_VISIT(self->active);
    Py_VISIT(self->task_frames);
    Py_VISIT(self->py_start);
    Py_VISIT(self->py_resume);
    Py_VISIT(self->py_branch);
    Py_VISIT(self->record_state);
    Py_VISIT(self->summarize);
    Py_VISIT(self->none_summary);
    Py_VISIT(self->disable);
    Py_VISIT(self->on_error);
    Py_VISIT(self->overflow_shape_tag);
    Py_VISIT(self->overflow_canon_tag);
    Py_VISIT(self->node_type);
    Py_VISIT(self->info_type);
    Py_VISIT(self->bounded_type);
    Py_VISIT(self->blake2b);
    Py_VISIT(self->str_markers);
    Py_VISIT(self->tempfile_names);
    Py_VISIT(self->tempfile_name_bits);
    Py_VISIT(self->int_summaries);
    Py_VISIT(self->str_summaries);
    Py_VISIT(self->bool_summaries[0]);
    Py_VISIT(self->bool_summaries[1]);
    Py_VISIT(self->plain_summaries);
    Py_VISIT(self->class_epoch);
    Py_VISIT(self->plain_epoch);
    if (self->arg_cache != NULL) {
        for (int i = 0; i < ARG_CACHE_SIZE; i++) {
            Py_VISIT(self->arg_cache[i].info);
            for (int j = 0; j < ARG_CACHE_ARGS; j++) {
                Py_VISIT(self->arg_cache[i].summaries[j]);
            }
            Py_VISIT(self->arg_cache[i].pair);
        }
    }
    Py_VISIT(self->display_names);
    Py_VISIT(self->dict_descriptors);
    Py_VISIT(self->str_keyed);
    Py_VISIT(self->class_attribute);
    Py_VISIT(self->state_type);
    Py_VISIT(self->state_limit);
    Py_VISIT(self->bucket);
    Py_VISIT(self->enum_type);
    for (int i = 0; i < PLAIN_CACHE_SIZE; i++) {
        Py_VISIT(self->classes[i].type);
        Py_VISIT(self->classes[i].summary);
        Py_VISIT(self->classes[i].bucket);
        Py_VISIT(self->classes[i].dict_descr);
    }
    return 0;
}

static int
Core_clear(Core *self)
{
    Py_CLEAR(self->tracer);
    Py_CLEAR(self->make_child);
    Py_CLEAR(self->recursion_reason);
    Py_CLEAR(self->str_reasons);
    Py_CLEAR(self->node_call_obj);
    Py_CLEAR(self->codes);
    Py_CLEAR(self->active);
    Py_CLEAR(self->task_frames);
    Py_CLEAR(self->py_start);
    Py_CLEAR(self->py_resume);
    Py_CLEAR(self->py_branch);
    Py_CLEAR(self->record_state);
    Py_CLEAR(self->summarize);
    Py_CLEAR(self->none_summary);
    Py_CLEAR(self->disable);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->overflow_shape_tag);
    Py_CLEAR(self->overflow_canon_tag);
    Py_CLEAR(self->node_type);
    Py_CLEAR(self->info_type);
    Py_CLEAR(self->bounded_type);
    Py_CLEAR(self->str_entry);
    Py_CLEAR(self->str_exit);
    Py_CLEAR(self->str_errors);
    Py_CLEAR(self->str_add_pair);
    Py_CLEAR(self->comma);
    Py_CLEAR(self->bytes_join);
    Py_CLEAR(self->canon_sep);
    Py_CLEAR(self->blake2b);
    Py_CLEAR(self->blake2b_kwargs);
    Py_CLEAR(self->str_digest);
    Py_CLEAR(self->str_int);
    Py_CLEAR(self->str_str);
    Py_CLEAR(self->str_markers);
    Py_CLEAR(self->tempfile_names);
    Py_CLEAR(self->tempfile_name_bits);
    Py_CLEAR(self->int_summaries);
    Py_CLEAR(self->str_summaries);
    Py_CLEAR(self->bool_summaries[0]);
    Py_CLEAR(self->bool_summaries[1]);
    Py_CLEAR(self->plain_summaries);
    Py_CLEAR(self->class_epoch);
    Py_CLEAR(self->plain_epoch);
    forget_arguments(self);
    Py_CLEAR(self->display_names);
    Py_CLEAR(self->dict_descriptors);
    Py_CLEAR(self->str_keyed);
    Py_CLEAR(self->class_attribute);
    Py_CLEAR(self->state_type);
    Py_CLEAR(self->state_limit);
    Py_CLEAR(self->bucket);
    Py_CLEAR(self->enum_type);
    for (int i = 0; i < BK_COUNT; i++) {
        Py_CLEAR(self->bucket_names[i]);
    }
    forget_plain(self);
    for (int i = 0; i < SHAPE_NAME_COUNT; i++) {
        Py_CLEAR(self->shape_names[i]);
        Py_CLEAR(self->shape_elided[i]);
        Py_CLEAR(self->shape_empty[i]);
    }
    Py_CLEAR(self->str_hex);
    Py_CLEAR(self->str_ellipsis);
    Py_CLEAR(self->str_bar);
    Py_CLEAR(self->str_comma_tight);
    memset(self->code_cache, 0, sizeof(self->code_cache));
    memset(self->branch_cache, 0, sizeof(self->branch_cache));
    for (int i = 0; i < ID_KEY_CACHE_SIZE; i++) {
        Py_CLEAR(self->id_keys[i].key);
        self->id_keys[i].ptr = NULL;
    }
    return 0;
}

static void
Core_dealloc(Core *self)
{
    PyObject_GC_UnTrack(self);
    Core_clear(self);
    PyMem_Free(self->arg_cache);
    self->arg_cache = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Core_summarize(Core *self, PyObject *value)
{
    return summarize(self, value);
}

static PyObject *
Core_forget_classes(Core *self, PyObject *Py_UNUSED(ignored))
{
    forget_plain(self);
    forget_arguments(self);
    Py_RETURN_NONE;
}

static PyObject *
Core_bucket(Core *self, PyObject *value)
{
    return state_bucket(self, value);
}

static PyObject *
Core_instance_dict(Core *self, PyObject *value)
{
    PyObject *fields = instance_fields(self, value);
    if (fields == NULL && !PyErr_Occurred()) {
        return Py_NewRef(Py_Ellipsis);  /* not known here: values.py must read it */
    }
    return fields;
}

static PyObject *
Core_add_pair(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_pair(bounded, pair)");
        return NULL;
    }
    if (add_pair(self, args[0], args[1]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Core_add_values(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyTuple_CheckExact(args[2]) || (args[1] != Py_None &&
        (!PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2])))) {
        PyErr_SetString(PyExc_TypeError,
                        "add_values(bounded, labels: tuple | None, values: tuple, shape_only)");
        return NULL;
    }
    PyObject *bounded = args[0];
    PyObject *values = args[2];
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    int shape_only = PyObject_IsTrue(args[3]);
    if (shape_only < 0) {
        return NULL;
    }
    if (args[1] == Py_None) {
        if (n != 1) {
            PyErr_SetString(PyExc_TypeError, "a result is one value");
            return NULL;
        }
        int fast = fast_add(self, bounded, NULL, &PyTuple_GET_ITEM(values, 0), 1, shape_only);
        if (fast < 0 || (fast == 0 && record_result(self, bounded, PyTuple_GET_ITEM(values, 0),
                                                    shape_only) < 0)) {
            return NULL;
        }
        return PyBool_FromLong(fast);
    }
    if (n == 0 || shape_only) {
        PyErr_SetString(PyExc_TypeError, "arguments are one value or more, never shape_only");
        return NULL;
    }
    int fast = fast_add(self, bounded, args[1], &PyTuple_GET_ITEM(values, 0), n, 0);
    if (fast < 0 || (fast == 0 && general_args(self, bounded, NULL, args[1],
                                               &PyTuple_GET_ITEM(values, 0), n) < 0)) {
        return NULL;
    }
    return PyBool_FromLong(fast);
}

static PyMethodDef Core_methods[] = {
    {"summarize", (PyCFunction)Core_summarize, METH_O,
     "values.summarize as the compiled core computes it (for tests)."},
    {"add_values", (PyCFunction)(void (*)(void))Core_add_values, METH_FASTCALL,
     "add_values(bounded, labels, values, shape_only): the arguments' pair (labels a tuple) or "
     "a result (labels None, one value) added as the callbacks add it; True when the "
     "allocation-free path took it (for tests and contract.core_disagreement)."},
    {"add_pair", (PyCFunction)(void (*)(void))Core_add_pair, METH_FASTCALL,
     "BoundedValues.add_pair as the compiled core performs it (for tests)."},
    {"bucket", (PyCFunction)Core_bucket, METH_O,
     "values.bucket as the compiled core computes it (for tests)."},
    {"instance_dict", (PyCFunction)Core_instance_dict, METH_O,
     "reflect.instance_dict as the compiled core reads it, ... when it must ask (for tests)."},
    {"forget_classes", (PyCFunction)Core_forget_classes, METH_NOARGS,
     "Drop the core's copy of the memo of plain classes (at every phase start)."},
    {"on_start", (PyCFunction)(void (*)(void))Core_on_start, METH_FASTCALL,
     "PY_START: a code object starts a new frame."},
    {"on_resume", (PyCFunction)(void (*)(void))Core_on_resume, METH_FASTCALL,
     "PY_RESUME and PY_THROW: a generator or coroutine frame resumes."},
    {"on_return", (PyCFunction)(void (*)(void))Core_on_return, METH_FASTCALL,
     "PY_RETURN: a frame returns a value."},
    {"on_yield", (PyCFunction)(void (*)(void))Core_on_yield, METH_FASTCALL,
     "PY_YIELD: a generator or coroutine frame suspends."},
    {"on_branch", (PyCFunction)(void (*)(void))Core_on_branch, METH_FASTCALL,
     "BRANCH: a decision in repository code took one direction."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Core_members[] = {
    {"recording", Py_T_BOOL, offsetof(Core, recording), 0,
     "Whether a phase is being recorded (mirrors Tracer._recording)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "diffgenome.recording.collect._accel.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The hot sys.monitoring callbacks of one Tracer, in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
};

/* frame_var(frame, name): what ``frame.f_locals.get(name)`` gives for an argument (a cell's
 * contents included; None when unbound), read from the interpreter frame's slot: on 3.12 the
 * Python callbacks read through this too, so that no core builds ``f_locals``, whose snapshot
 * keeps the frame's values alive (capabilities.frame_get_var). */
static PyObject *
module_frame_var(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "frame_var(frame, name)");
        return NULL;
    }
    PyObject *value = PyFrame_GetVar((PyFrameObject *)args[0], args[1]);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_NameError)) {
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    return value;
}

/* frame_key(frame): the key of a running frame in the tables of active frames, the address
 * of its interpreter frame, which the core reads without making the frame object. */
static PyObject *
module_frame_key(PyObject *module, PyObject *frame)
{
    (void)module;
    if (!PyFrame_Check(frame)) {
        PyErr_SetString(PyExc_TypeError, "frame_key(frame)");
        return NULL;
    }
    return PyLong_FromVoidPtr(((PyFrameObject *)frame)->f_frame);
}

/* frame_probe(names): what the core reads of its caller's frame, for
 * contract.frame_disagreement to compare with the public frame API: the caller's key, its
 * caller's key, its code object, and for each of ``names`` (its arguments after the first
 * ``skip``) the value read from the frame's slot, or ``None`` in a 1-tuple's place when the
 * slot is left to the frame object's path. */
static PyObject *
module_frame_probe(PyObject *module, PyObject *names)
{
    (void)module;
    if (!PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) == 0) {
        PyErr_SetString(PyExc_TypeError, "frame_probe(names): a non-empty tuple");
        return NULL;
    }
    IFrame *frame = current_iframe();
    if (frame == NULL) {
        Py_RETURN_NONE;
    }
    IFrame *back = iframe_back(frame);
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    PyObject *read = PyTuple_New(n);
    if (read == NULL) {
        return NULL;
    }
    Py_ssize_t start = arguments_start(frame, names);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value;
        if (start < 0 || !iframe_argument(frame, start + i, PyTuple_GET_ITEM(names, i), &value)) {
            value = Py_NewRef(Py_None);
        }
        else {
            PyObject *boxed = PyTuple_Pack(1, value);
            Py_DECREF(value);
            if (boxed == NULL) {
                Py_DECREF(read);
                return NULL;
            }
            value = boxed;
        }
        PyTuple_SET_ITEM(read, i, value);
    }
    PyObject *key = PyLong_FromVoidPtr(frame);
    PyObject *back_key = back == NULL ? Py_NewRef(Py_None) : PyLong_FromVoidPtr(back);
    PyObject *result = NULL;
    if (key != NULL && back_key != NULL) {
        result = PyTuple_Pack(4, key, back_key, (PyObject *)iframe_code(frame), read);
    }
    Py_XDECREF(key);
    Py_XDECREF(back_key);
    Py_DECREF(read);
    return result;
}

static PyMethodDef accel_functions[] = {
    {"frame_var", (PyCFunction)(void (*)(void))module_frame_var, METH_FASTCALL,
     "frame.f_locals.get(name) for an argument, without building f_locals."},
    {"frame_key", (PyCFunction)module_frame_key, METH_O,
     "The key of a running frame in the tables of active frames."},
    {"frame_probe", (PyCFunction)module_frame_probe, METH_O,
     "What the core reads of its caller's frame (contract.frame_disagreement)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "diffgenome.recording.collect._accel",
    .m_doc = "Compiled hot path of the diffgenome collector (see tracer.py).",
    .m_size = -1,
    .m_methods = accel_functions,
};

/* -DDIFFGENOME_CORE_SOURCE=<hex digest>, unquoted (MSVC mangles quotes in defines). */
#ifndef DIFFGENOME_CORE_SOURCE
#define DIFFGENOME_CORE_SOURCE unknown
#endif
#define SOURCE_TEXT_(x) #x
#define SOURCE_TEXT(x) SOURCE_TEXT_(x)
#define SOURCE_PREFIX "diffgenome-core-source:"
static const char SOURCE_MARK[] = SOURCE_PREFIX SOURCE_TEXT(DIFFGENOME_CORE_SOURCE);

PyMODINIT_FUNC
PyInit__accel(void)
{
    if (PyType_Ready(&CoreType) < 0) {
        return NULL;
    }
    one = PyLong_FromLong(1);
    if (one == NULL) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&accel_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    /* Bumped whenever Core's constructor or behaviour changes: tracer.py refuses a core built
     * from other sources (a stale in-place build) and records with its own callbacks. */
    if (PyModule_AddIntConstant(module, "VERSION", 22) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "ABI", PY_VERSION_HEX >> 16) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    /* The digest of the C sources this file was built from (setup.py computes it, and so does
     * the analysis side when it builds the core for another interpreter): the marker lets a
     * core be matched to its sources from its bytes, without loading it. */
    if (PyModule_AddStringConstant(module, "SOURCE", SOURCE_MARK + sizeof(SOURCE_PREFIX) - 1) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

/*
 * What the two files of the compiled core share: the Core object and a few helpers.
 *
 * _accel.c #includes _accel_values.c (one translation unit, so the value paths stay static
 * and inlinable in the hot callbacks); both include this header. setup.py lists every file
 * as a dependency of the extension and scripts/venv rebuilds it when any of them changes.
 */
#ifndef DIFFGENOME_ACCEL_H
#define DIFFGENOME_ACCEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>

/* The interpreter's own frames. On 3.12 and 3.13 the core reads an event's frame, its
 * callers and its arguments from the interpreter's frame (``_PyInterpreterFrame``), so that a
 * call in scope makes no frame object, and the tables of active frames are keyed by that
 * frame's address, which the Python callbacks get through ``frame_key``. The layout is the
 * running interpreter's own header; contract.frame_disagreement compares what the core reads
 * this way with the public frame API before the core is used. */
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

typedef _PyInterpreterFrame IFrame;

static inline PyCodeObject *
iframe_code(IFrame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    return (PyCodeObject *)frame->f_executable;
#else
    return frame->f_code;
#endif
}

/* The frame PyEval_GetFrame() would make an object of (borrowed, NULL when none). */
static inline IFrame *
current_iframe(void)
{
    return _PyThreadState_GetFrame(PyThreadState_Get());
}

/* The frame PyFrame_GetBack() would give (borrowed, NULL when none). */
static inline IFrame *
iframe_back(IFrame *frame)
{
    return _PyFrame_GetFirstComplete(frame->previous);
}

#define CODE_CACHE_SIZE 1024
#define BRANCH_CACHE_SIZE 4096
#define ID_KEY_CACHE_SIZE 1024
#define FAST_PARENT_DEPTH 32
#define SUMMARY_CACHE_LIMIT 8192
#define PLAIN_CACHE_SIZE 256
#define MAX_CANON_BYTES 8192  /* the largest values.MAX_BYTES this core follows */
#define SHAPE_NAME_COUNT 13

#define ARG_CACHE_SIZE 1024
#define ARG_CACHE_ARGS 6

/* A pair of argument summaries made once (record_args): the code object's info, the
 * summaries of its arguments (by identity; held) and the pair made of them. */
typedef struct {
    PyObject *info;
    Py_ssize_t n;
    PyObject *summaries[ARG_CACHE_ARGS];
    PyObject *pair;
} ArgEntry;

/* The encodings below the "handed over" line come from contract.core_encodings(): the
 * Python side owns them, the core is told them when it is built. */
typedef struct {
    PyObject_HEAD
    char recording;
    /* Whether an entry of ``classes`` / ``arg_cache`` may be filled since they were last
     * emptied: forget_classes (every phase start) then walks them only when one may be. */
    char classes_filled, args_filled;
    char frame_get_var;      /* capabilities.frame_get_var: arguments via PyFrame_GetVar */
    PyObject *tracer;        /* for tracer.errors */
    PyObject *codes;         /* id(code) -> CodeInfo | None */
    PyObject *active;        /* frame_key(frame) -> Node */
    PyObject *task_frames;   /* non-empty: attribution needs the Python path */
    PyObject *py_start, *py_resume, *py_branch;
    /* tracer.child: a call's node made where the tree has none yet (its bound and sink). */
    PyObject *make_child, *node_call_obj;
    /* Tracer.RECURSION_REASON, added to tracer._reasons when a callback meets the recursion
     * limit (as the Python callbacks do). */
    PyObject *recursion_reason, *str_reasons;
    PyObject *record_state;
    PyObject *summarize;
    PyObject *disable;
    PyObject *on_error;      /* None, or Tracer.keep_first_error (DIFFGENOME_DEBUG=callbacks) */
    PyObject *node_type, *info_type, *bounded_type;
    PyObject *str_errors, *str_add_pair;
    /* Private caches of values the Python side already decided; see code_info and
     * summarize. */
    struct { PyObject *code; PyObject *info; } code_cache[CODE_CACHE_SIZE];
    /* Copies of CodeInfo.branch_cache entries (borrowed, like code_cache): see on_branch. */
    struct { PyObject *info; long long key; PyObject *outcome; long value; }
        branch_cache[BRANCH_CACHE_SIZE];
    struct { void *ptr; PyObject *key; } id_keys[ID_KEY_CACHE_SIZE];  /* see id_key */
    PyObject *int_summaries, *str_summaries;
    PyObject *bool_summaries[2];
    /* Copies of the per-phase memos of values.py and reflect.py, direct-mapped by class
     * pointer: each entry holds its class and what is known of it (NULL: not known here),
     * the summary of its instances (values._PLAIN_SUMMARY), the bucket of its instances
     * (``"type:" + type_name``, reflect._DISPLAY_NAMES) and its ``__dict__`` descriptor
     * (reflect._DICT_DESCRIPTORS). Dropped when reflect.CLASS_EPOCH[0] is no longer
     * plain_epoch (the memos were reset); an entry of those memos never changes before. */
    struct {
        PyObject *type, *summary, *bucket, *dict_descr;
    } classes[PLAIN_CACHE_SIZE];
    PyObject *plain_summaries, *display_names, *dict_descriptors, *class_epoch, *plain_epoch;
    /* reflect._STR_KEYED (classes whose namespace holds only exact-str keys, by id) and its
     * bound, and vocab.CLASS_ATTRIBUTE_BUCKET: a receiver's attribute found on its class. */
    PyObject *str_keyed, *class_attribute;
    Py_ssize_t str_keyed_max;
    PyObject *state_type, *state_limit, *bucket, *enum_type;
    PyObject *bucket_names[12];
    ArgEntry *arg_cache;     /* ARG_CACHE_SIZE entries, direct-mapped */
    /* slot offsets */
    Py_ssize_t n_ntype, n_key, n_children, n_count, n_returned, n_yielded, n_args,
        n_results, n_branches;
    Py_ssize_t i_code, i_is_test, i_argnames, i_arg_labels, i_has_state, i_salted,
        i_branch_cache;
    Py_ssize_t b_seen, b_limit, b_overflow;
    Py_ssize_t n_state, i_self_attrs, i_self_labels, i_receiver, i_state_globals,
        i_global_labels, s_facts, s_limit, s_overflow;
    PyObject *blake2b, *blake2b_kwargs, *str_digest, *str_int, *str_str, *str_markers;
    /* stable.py's set of tempfile names seen, and its bitmap of their window hashes. */
    PyObject *tempfile_names, *tempfile_name_bits;
    /* -- handed over ------------------------------------------------------------------ */
    long node_call;                       /* contract.NODE_CALL */
    PyObject *str_entry, *str_exit;       /* contract.STATE_ENTRY, STATE_EXIT */
    PyObject *comma, *bytes_join;         /* ARG_SHAPE_SEPARATOR, ARG_CANON_SEPARATOR.join */
    PyObject *canon_sep;                  /* ARG_CANON_SEPARATOR when one byte, else NULL */
    int branch_shift;                     /* contract.BRANCH_KEY_SHIFT */
    long no_decision;                     /* codemap.NO_DECISION: disable that branch event */
    long small_int;                       /* values.SMALL_INT */
    Py_ssize_t short_str;                 /* values.SHORT_STR */
    PyObject *overflow_shape_tag, *overflow_canon_tag;  /* values.OVERFLOW_*_TAG */
    PyObject *none_summary;               /* values.NONE_SUMMARY */
    int name_length;                      /* stable.TEMPFILE_NAME_LENGTH */
    uint32_t name_base;                   /* stable.NAME_HASH_BASE */
    int name_bits;                        /* stable.NAME_HASH_BITS */
    /* values.MAX_DEPTH, MAX_ITEMS, MAX_BYTES, MAX_SHAPE; len(SHAPE_ITEMS) (2), SHAPE_ITEMS,
     * MAX_UNION */
    int max_depth, max_items, max_bytes, max_shape, shape_depth, shape_items[2], max_union;
    /* Written by the core (compared with values.py by contract.core_disagreement): the
     * shapes of the scalars and containers, bare, elided (``name[...]``) and empty. */
    PyObject *shape_names[SHAPE_NAME_COUNT], *shape_elided[SHAPE_NAME_COUNT],
        *shape_empty[SHAPE_NAME_COUNT];
    PyObject *str_hex, *str_ellipsis, *str_bar, *str_comma_tight;
} Core;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static PyObject *one;

static int
increment(PyObject *obj, Py_ssize_t offset)
{
    PyObject **slot = (PyObject **)((char *)obj + offset);
    PyObject *old = *slot;
    if (old == NULL) {
        PyErr_SetString(PyExc_AttributeError, "counter slot is not set");
        return -1;
    }
    PyObject *value = PyNumber_Add(old, one);
    if (value == NULL) {
        return -1;
    }
    *slot = value;
    Py_DECREF(old);
    return 0;
}

#endif /* DIFFGENOME_ACCEL_H */

/* The floor of sys.monitoring: a callback that does nothing, in C.
 *
 * What CPython itself costs to deliver PY_START, PY_RETURN and BRANCH events to a tool is
 * the limit any recorder is judged against; this module is that callback and nothing else
 * (no allocation, no argument read), so its time over plain is the machinery's own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
noop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    (void)args;
    (void)nargs;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"noop", (PyCFunction)(void (*)(void))noop, METH_FASTCALL, "Do nothing, return None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bench_floor", "An empty sys.monitoring callback.", -1, methods,
};

PyMODINIT_FUNC
PyInit__bench_floor(void)
{
    return PyModule_Create(&module);
}

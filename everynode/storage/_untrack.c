/* Takes stored objects out of CPython's cyclic garbage collector (storage/untracked.py says why).
 *
 * untrack(value) walks a JSON-shaped tree (dicts with string keys, lists, atoms) and untracks
 * every dict and list in it whose whole sub-tree can be untracked, bottom-up.  A container that
 * is untracked already is not entered: CPython untracks a dict or tuple only when nothing in it
 * is tracked, and this walk only ever untracks a container after all of its descendants, so an
 * untracked container never has a tracked descendant.  Anything that is not a plain dict, list
 * or atom (a tuple, an object of any class, a non-string key), or a nesting deeper than
 * MAX_DEPTH, stays tracked, and so do all the containers above it.
 *
 * Untracking is never unsafe for memory: the collector treats a reference from an untracked
 * container as one from outside, so what it refers to stays alive as long as the container
 * does.  The only cost of a mistake is a reference cycle through an untracked container that
 * is never reclaimed, and a tree of JSON values has no cycles.  A dict that is given a
 * container later is tracked again by CPython itself; stored objects are never changed.
 *
 * Nothing here runs Python code or allocates, so no collection can start during the walk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_DEPTH 128

/* 1 if value is now outside the collector (an atom, or a container untracked with its whole
 * sub-tree), 0 if it stays tracked. */
static int untrack_value(PyObject *value, int depth)
{
    /* The type first, by address: most values are strings and numbers, told apart without
     * looking further than their type. */
    PyTypeObject *type = Py_TYPE(value);
    int is_dict = type == &PyDict_Type;
    if (!is_dict && type != &PyList_Type) {
        return !PyType_IS_GC(type) || !PyObject_GC_IsTracked(value);
    }
    if (!PyObject_GC_IsTracked(value)) {
        return 1;
    }
    if (depth >= MAX_DEPTH) {
        return 0;
    }
    int all = 1;
    if (is_dict) {
        Py_ssize_t pos = 0;
        PyObject *key;
        PyObject *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key) || !untrack_value(item, depth + 1)) {
                all = 0;
            }
        }
    } else {
        Py_ssize_t n = PyList_GET_SIZE(value);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!untrack_value(PyList_GET_ITEM(value, i), depth + 1)) {
                all = 0;
            }
        }
    }
    if (all) {
        PyObject_GC_UnTrack(value);
    }
    return all;
}

static PyObject *untrack(PyObject *module, PyObject *value)
{
    (void)module;
    return PyBool_FromLong(untrack_value(value, 0));
}

static PyMethodDef methods[] = {
    {"untrack", untrack, METH_O,
     "untrack(value) -> bool: take a JSON-shaped value's dicts and lists out of the cyclic "
     "garbage collector; True when nothing in it stays tracked."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_untrack", "Stored objects outside the cyclic garbage collector.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__untrack(void)
{
    return PyModule_Create(&module);
}

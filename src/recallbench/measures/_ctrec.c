/* recallbench.measures._ctrec: trec_eval's measures in C, for plain files and in-memory dicts.
 *
 * A port of trec_eval 10.0's evaluation of the measures below (form_res_rels.c and the
 * m_*.c files named at each family), so that values agree with it to the last bit: the
 * same arithmetic in the same order, and the summary accumulated query by query in the
 * order trec_eval takes them (query ids sorted byte-wise). Everything it does not take it
 * declines by returning None: the Python engine then evaluates (and reports any problem),
 * so results and error messages are the same either way.
 *
 * Files are taken when plain: UTF-8 (ids compared as bytes, as trec_eval and the line
 * reader do) without NUL or the separator controls 0x1c-0x1f, four fields on every qrels
 * data line and at least six on every run data line (comments skipped where the line
 * reader skips them), scores as the line reader takes them, grades as integers of at
 * most 15 digits, no document returned twice for a query and no pair judged twice. (A
 * query whose grades are all below 0 takes the Python engine's values: trec_eval has none.)
 *
 * This file is the module's Python side (arguments, dicts, results); _ctrec_measures.c
 * computes a query's values and prints trec_eval's lines (_ctrec_all_trec.c the families
 * -m all_trec adds), _ctrec_files.c reads files.
 */
#include "_ctrec.h"

/* -------------------------------------------------------------- families */

static void free_families(Families *fs)
{
    Py_ssize_t i;
    if (fs->families) {
        for (i = 0; i < fs->count; i++) {
            PyMem_Free(fs->families[i].cutoffs);
            PyMem_Free(fs->families[i].levels);
            PyMem_Free((void *) fs->families[i].labels);
        }
        PyMem_Free(fs->families);
    }
    Py_XDECREF(fs->label_refs);
    fs->families = NULL;
}

/* [(code, (parameter, ...), (label, ...)), ...] */
static int parse_families(PyObject *spec, Families *fs)
{
    Py_ssize_t i, j, n;
    fs->families = NULL;
    fs->count = 0;
    fs->slots = 0;
    fs->depth = 0;
    fs->label_refs = NULL;
    if (!PyList_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "families must be a list");
        return -1;
    }
    n = PyList_GET_SIZE(spec);
    fs->families = PyMem_Calloc((size_t) (n ? n : 1), sizeof(Family));
    fs->label_refs = PyList_New(0);
    if (!fs->families || !fs->label_refs)
        return -1;
    for (i = 0; i < n; i++) {
        Family *f = &fs->families[i];
        PyObject *item = PyList_GET_ITEM(spec, i), *params, *labels;
        int code;
        if (!PyArg_ParseTuple(item, "iO!O!", &code, &PyTuple_Type, &params, &PyTuple_Type,
                              &labels))
            return -1;
        long depth;
        if (code < 0 || code >= F_COUNT || PyTuple_GET_SIZE(labels) < 1 ||
            PyTuple_GET_SIZE(labels) > 64 || PyTuple_GET_SIZE(params) > 64) {
            PyErr_SetString(PyExc_ValueError, "bad measure family");
            return -1;
        }
        f->code = code;
        f->count = PyTuple_GET_SIZE(labels);
        f->num_params = PyTuple_GET_SIZE(params);
        fs->count++;
        f->labels = PyMem_Calloc((size_t) f->count, sizeof(char *));
        f->cutoffs = PyMem_Calloc((size_t) (f->num_params + 1), sizeof(long));
        f->levels = PyMem_Calloc((size_t) (f->num_params + 1), sizeof(double));
        if (!f->labels || !f->cutoffs || !f->levels)
            return -1;
        if (PyList_Append(fs->label_refs, labels) < 0)
            return -1;
        for (j = 0; j < f->count; j++) {
            f->labels[j] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(labels, j));
            if (!f->labels[j])
                return -1;
        }
        for (j = 0; j < f->num_params; j++) {
            f->levels[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(params, j));
            if (PyErr_Occurred())
                return -1;
            if (!(fabs(f->levels[j]) < 1e15)) {
                PyErr_SetString(PyExc_ValueError, "bad measure parameter");
                return -1;
            }
            f->cutoffs[j] = (long) f->levels[j];
        }
        f->width = ctrec_family_width(f);
        if (f->width < f->count || f->width > 4096) {
            PyErr_SetString(PyExc_ValueError, "bad measure family");
            return -1;
        }
        f->slot = fs->slots;
        fs->slots += f->width;
        depth = ctrec_family_depth(f);  /* -1: reads every rank */
        if (depth < 0 || fs->depth < 0)
            fs->depth = -1;
        else if (depth > fs->depth)
            fs->depth = depth;
    }
    return 0;
}


static int set_up_call(long level, long max_docs, int judged_only, int complete,
                       PyObject *spec, Options *o, Families *fs)
{
    o->level = level;
    o->max_docs = max_docs;
    o->judged_only = judged_only;
    o->complete = complete;
    if (max_docs < 0) {
        PyErr_SetString(PyExc_ValueError, "max_docs must be 0 (all) or more");
        return -1;
    }
    if (parse_families(spec, fs) < 0) {
        free_families(fs);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(evaluate_files_doc,
"evaluate_files(qrels, run, families, level, max_docs, judged_only, complete, per_query,\n"
"               summary, runid, block) -> (str, str) | (int, str) | None\n\n"
"trec_eval's output for two plain files and the run's tag, or None when they are not\n"
"plain (or nothing is evaluated): the Python engine then takes them. ``block`` > 0\n"
"streams the run, ``block`` bytes read at a time; a run not grouped by query then gives\n"
"(line, query id): where a query comes back after its lines ended.");

/* Evaluate two files without the GIL; 1 done or 2 not grouped (``*work`` to free), 0
 * declined, -1 with the error set. */
static int evaluate_file_pair(const char *qrels, const char *run, const Families *fs,
                              const Options *o, int per_query, int summary, int runid,
                              int collect, Py_ssize_t block, FileWork **work)
{
    int status;
    FileWork *w = ctrec_file_work_new();
    if (!w) {
        PyErr_NoMemory();
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    status = ctrec_evaluate_plain_files(w, qrels, run, fs, o, per_query, summary,
                                        runid ? "runid" : NULL, collect,
                                        block > 0 ? (size_t) block : 0);
    Py_END_ALLOW_THREADS
    if (status <= 0) {
        ctrec_file_work_free(w);
        if (status < 0)
            PyErr_NoMemory();
        return status;
    }
    *work = w;
    return status;
}

/* (line, query id) of a run not grouped by query. */
static PyObject *comeback(const FileWork *w)
{
    long line;
    const char *query = ctrec_file_work_comeback(w, &line);
    return Py_BuildValue("(lN)", line,
                         PyUnicode_DecodeUTF8(query, (Py_ssize_t) strlen(query), "replace"));
}

static PyObject *py_evaluate_files(PyObject *self, PyObject *args)
{
    const char *qrels, *run;
    PyObject *spec, *result = NULL;
    long level, max_docs;
    int judged_only, complete, per_query, summary, runid, status;
    Py_ssize_t block;
    Families fs;
    Options o;
    FileWork *w = NULL;
    (void) self;
    if (!PyArg_ParseTuple(args, "ssO!llpppppn", &qrels, &run, &PyList_Type, &spec, &level,
                          &max_docs, &judged_only, &complete, &per_query, &summary, &runid,
                          &block))
        return NULL;
    if (set_up_call(level, max_docs, judged_only, complete, spec, &o, &fs) < 0)
        return NULL;
    status = evaluate_file_pair(qrels, run, &fs, &o, per_query, summary, runid, 0, block, &w);
    if (status == 0)
        result = Py_NewRef(Py_None);
    else if (status == 2) {
        result = comeback(w);
        ctrec_file_work_free(w);
    } else if (status > 0) {
        size_t size;
        const char *data = ctrec_file_work_text(w, &size);
        PyObject *text = PyUnicode_DecodeUTF8(data, (Py_ssize_t) size, NULL);
        result = text ? Py_BuildValue("(Ns)", text, ctrec_file_work_tag(w)) : NULL;
        ctrec_file_work_free(w);
    }
    free_families(&fs);
    return result;
}

PyDoc_STRVAR(evaluate_file_values_doc,
"evaluate_file_values(qrels, run, families, level, max_docs, judged_only, complete, block)\n"
"    -> (query_ids, values, missing, num_rel, complete_num_rel, tag) | (int, str) | None\n\n"
"Per-query values of two plain files, as evaluate_dicts gives them for dicts, and the\n"
"run's tag; None when they are not plain (or nothing is evaluated).");

static PyObject *py_evaluate_file_values(PyObject *self, PyObject *args)
{
    const char *qrels, *run;
    PyObject *spec, *names = NULL, *values = NULL, *missing = NULL, *relevant = NULL;
    PyObject *result = NULL;
    long level, max_docs;
    int judged_only, complete, status;
    Py_ssize_t block;
    Families fs;
    Options o;
    FileWork *w = NULL;
    const FileValues *c;
    Py_ssize_t i, s, n;
    (void) self;
    if (!PyArg_ParseTuple(args, "ssO!llppn", &qrels, &run, &PyList_Type, &spec, &level,
                          &max_docs, &judged_only, &complete, &block))
        return NULL;
    if (set_up_call(level, max_docs, judged_only, complete, spec, &o, &fs) < 0)
        return NULL;
    status = evaluate_file_pair(qrels, run, &fs, &o, 0, 0, 0, 1, block, &w);
    if (status <= 0) {
        free_families(&fs);
        return status == 0 ? Py_NewRef(Py_None) : NULL;
    }
    if (status == 2) {
        result = comeback(w);
        ctrec_file_work_free(w);
        free_families(&fs);
        return result;
    }
    c = ctrec_file_work_values(w);
    n = (Py_ssize_t) c->count;
    names = PyList_New(n);
    values = PyList_New(fs.slots);
    missing = PyList_New(n);
    relevant = PyList_New(n);
    if (!names || !values || !missing || !relevant)
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *name = PyUnicode_DecodeUTF8(c->names[i], (Py_ssize_t) strlen(c->names[i]),
                                              NULL);
        PyObject *count = PyLong_FromLong(c->num_rel[i]);
        if (!name || !count) {
            Py_XDECREF(name);
            Py_XDECREF(count);
            goto done;
        }
        PyList_SET_ITEM(names, i, name);
        PyList_SET_ITEM(relevant, i, count);
        PyList_SET_ITEM(missing, i, Py_NewRef(c->missing[i] ? Py_True : Py_False));
    }
    for (s = 0; s < fs.slots; s++) {
        PyObject *column = PyList_New(n);
        if (!column)
            goto done;
        PyList_SET_ITEM(values, s, column);
        for (i = 0; i < n; i++) {
            PyObject *v = PyFloat_FromDouble(c->values[(size_t) i * (size_t) fs.slots + s]);
            if (!v)
                goto done;
            PyList_SET_ITEM(column, i, v);
        }
    }
    result = Py_BuildValue("(OOOOls)", names, values, missing, relevant,
                           c->complete_num_rel, ctrec_file_work_tag(w));
done:
    Py_XDECREF(names);
    Py_XDECREF(values);
    Py_XDECREF(missing);
    Py_XDECREF(relevant);
    ctrec_file_work_free(w);
    free_families(&fs);
    return result;
}

/* --------------------------------------------------------------- dicts */

PyDoc_STRVAR(evaluate_dicts_doc,
"evaluate_dicts(qrels, run, families, level, max_docs, judged_only, complete)\n"
"    -> (query_ids, values, missing, num_rel, complete_num_rel) | None\n\n"
"Per-query values of ``{query: {doc: grade}}`` against ``{query: {doc: score}}`` (str ids,\n"
"int grades, float or int scores, no NaN), queries in trec_eval's order; ``values`` holds\n"
"one list a family slot, ``missing`` which queries the run lacks (-c), ``num_rel`` each\n"
"query's relevant judgments, ``complete_num_rel`` the judgments graded above 0 (-c's\n"
"num_rel). None for anything else (the Python engine then converts and evaluates).");

static PyObject *stand_in_key;  /* STAND_IN as a str */

/* The grade in a query's judgments (exact str keys: the lookup cannot fail; the values
 * were checked to be ints in range). */
static long grade_in_dict(const void *context, const Hit *hit)
{
    PyObject *grade = PyDict_GetItem((PyObject *) context, hit->key);
    long g;
    if (!grade)
        return RELVALUE_NONPOOL;
    g = PyLong_AsLong(grade);
    return g < 0 ? RELVALUE_UNJUDGED : g;
}

static PyObject *py_evaluate_dicts(PyObject *self, PyObject *args)
{
    PyObject *qrels, *run, *spec, *names = NULL, *values = NULL, *missing = NULL;
    PyObject *relevant = NULL;
    PyObject *result = NULL, *key, *judged;
    long level, max_docs;
    int judged_only, complete;
    Py_ssize_t pos, n_eval = 0, max_run = 1, max_judged = 1, i, s;
    long complete_num_rel = 0;
    Families fs;
    Options o;
    Hit *hits = NULL;
    long *grades = NULL, *rels = NULL;
    double *slot_values = NULL;
    (void) self;
    if (!PyArg_ParseTuple(args, "O!O!O!llpp", &PyDict_Type, &qrels, &PyDict_Type, &run,
                          &PyList_Type, &spec, &level, &max_docs, &judged_only, &complete))
        return NULL;
    if (set_up_call(level, max_docs, judged_only, complete, spec, &o, &fs) < 0)
        return NULL;
    /* the evaluated queries: judged ones the run has (or all judged, with -c) */
    names = PyList_New(0);
    if (!names)
        goto done;
    pos = 0;
    while (PyDict_Next(qrels, &pos, &key, &judged)) {
        PyObject *ranking;
        if (!PyUnicode_CheckExact(key) || !PyDict_CheckExact(judged))
            goto decline;
        if (PyDict_GET_SIZE(judged) == 0)
            goto decline;  /* the Python engine evaluates a query without judgments */
        ranking = PyDict_GetItemWithError(run, key);
        if (!ranking && PyErr_Occurred())
            goto done;
        if (ranking && (!PyDict_CheckExact(ranking) || PyDict_GET_SIZE(ranking) == 0))
            goto decline;  /* an empty ranking, too: not trec_eval's stand-in */
        if (!ranking && !complete)
            continue;
        if (ranking && PyDict_GET_SIZE(ranking) > max_run)
            max_run = PyDict_GET_SIZE(ranking);
        if (PyDict_GET_SIZE(judged) > max_judged)
            max_judged = PyDict_GET_SIZE(judged);
        if (PyList_Append(names, key) < 0)
            goto done;
    }
    pos = 0;
    while (PyDict_Next(run, &pos, &key, &judged))  /* other keys: the Python engine's str() */
        if (!PyUnicode_CheckExact(key))
            goto decline;
    if (PyList_Sort(names) < 0)
        goto done;
    n_eval = PyList_GET_SIZE(names);
    if (!n_eval)
        goto decline;  /* nothing evaluated: the Python engine says so */
    hits = PyMem_Malloc((size_t) max_run * sizeof(Hit));
    rels = PyMem_Malloc((size_t) max_run * sizeof(long));
    grades = PyMem_Malloc((size_t) max_judged * sizeof(long));
    slot_values = PyMem_Calloc((size_t) fs.slots + 1, sizeof(double));
    values = PyList_New(fs.slots);
    missing = PyList_New(n_eval);
    relevant = PyList_New(n_eval);
    if (!hits || !rels || !grades || !slot_values || !values || !missing || !relevant) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (s = 0; s < fs.slots; s++) {
        PyObject *column = PyList_New(n_eval);
        if (!column)
            goto done;
        PyList_SET_ITEM(values, s, column);
    }
    for (i = 0; i < n_eval; i++) {
        PyObject *name = PyList_GET_ITEM(names, i), *ranking, *doc, *score;
        Py_ssize_t n = 0, k = 0;
        Judged summary;
        int stand_in;
        judged = PyDict_GetItem(qrels, name);
        pos = 0;
        while (PyDict_Next(judged, &pos, &doc, &score)) {
            long g;
            int overflow;
            if (!PyUnicode_CheckExact(doc) || !PyLong_CheckExact(score))
                goto decline;
            g = PyLong_AsLongAndOverflow(score, &overflow);
            if (overflow || g >= (1L << 53) || g <= -(1L << 53))
                goto decline;
            grades[k++] = g;
            if (g > 0)
                complete_num_rel++;
        }
        ctrec_summarise_grades(grades, (long) k, o.level, &summary);
        ranking = PyDict_GetItem(run, name);
        stand_in = ranking == NULL;
        if (!stand_in) {
            pos = 0;
            while (PyDict_Next(ranking, &pos, &doc, &score)) {
                Hit *h = &hits[n++];
                if (!PyUnicode_CheckExact(doc))
                    goto decline;
                h->doc = PyUnicode_AsUTF8AndSize(doc, &h->len);
                if (!h->doc) {
                    PyErr_Clear();
                    goto decline;  /* lone surrogates: the Python engine orders them */
                }
                if (PyFloat_CheckExact(score))
                    h->score = PyFloat_AS_DOUBLE(score);
                else if (PyLong_CheckExact(score)) {
                    h->score = PyLong_AsDouble(score);
                    if (h->score == -1.0 && PyErr_Occurred()) {
                        PyErr_Clear();
                        goto decline;
                    }
                } else
                    goto decline;
                if (isnan(h->score))
                    goto decline;
                h->key = doc;
            }
        } else {
            Hit *h = &hits[n++];
            h->doc = STAND_IN;
            h->len = (Py_ssize_t) strlen(STAND_IN);
            h->score = 1.0;
            h->key = stand_in_key;
        }
        ctrec_evaluate_query(hits, n, &summary, &o, &fs, grade_in_dict, judged, rels,
                             stand_in, slot_values);
        for (s = 0; s < fs.slots; s++) {
            PyObject *v = PyFloat_FromDouble(slot_values[s]);
            if (!v)
                goto done;
            PyList_SET_ITEM(PyList_GET_ITEM(values, s), i, v);
        }
        PyList_SET_ITEM(missing, i, Py_NewRef(stand_in ? Py_True : Py_False));
        {
            PyObject *count = PyLong_FromLong(summary.num_rel);
            if (!count)
                goto done;
            PyList_SET_ITEM(relevant, i, count);
        }
    }
    result = Py_BuildValue("(OOOOl)", names, values, missing, relevant, complete_num_rel);
    goto done;
decline:
    if (!PyErr_Occurred())
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(names);
    Py_XDECREF(values);
    Py_XDECREF(missing);
    Py_XDECREF(relevant);
    PyMem_Free(hits);
    PyMem_Free(rels);
    PyMem_Free(grades);
    PyMem_Free(slot_values);
    free_families(&fs);
    return result;
}

static PyMethodDef methods[] = {
    {"evaluate_files", py_evaluate_files, METH_VARARGS, evaluate_files_doc},
    {"evaluate_file_values", py_evaluate_file_values, METH_VARARGS,
     evaluate_file_values_doc},
    {"evaluate_dicts", py_evaluate_dicts, METH_VARARGS, evaluate_dicts_doc},
    {"read_qrels", ctrec_py_read_qrels, METH_VARARGS, ctrec_read_qrels_doc},
    {"read_run", ctrec_py_read_run, METH_VARARGS, ctrec_read_run_doc},
    {"run_groups", ctrec_py_run_groups, METH_VARARGS, ctrec_run_groups_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctrec",
    "trec_eval's measures in C (see recallbench.measures._trec_native).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ctrec(void)
{
    ctrec_init_classes();
    stand_in_key = PyUnicode_InternFromString(STAND_IN);
    if (!stand_in_key)
        return NULL;
    return PyModule_Create(&module);
}


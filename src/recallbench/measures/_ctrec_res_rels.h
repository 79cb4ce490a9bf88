/* recallbench.measures._ctrec: what its two measure files share: one query's ranking as
 * trec_eval's measures read it (_ctrec_measures.c forms it and computes the official
 * families, _ctrec_all_trec.c the others). */
#ifndef RECALLBENCH_CTREC_RES_RELS_H
#define RECALLBENCH_CTREC_RES_RELS_H

#include "_ctrec.h"

/* trec_eval's RES_RELS for one query (form_res_rels.c). */
typedef struct {
    long num_ret;
    long num_rel_ret;
    long num_rel;
    long num_nonrel;       /* judged grades in [0, level) */
    long num_nonpool;      /* returned, not judged (0 under -J, as form_res_rels.c) */
    long num_unjudged;     /* returned, judged below 0 (0 under -J) */
    const long *rel;
    const long *ideal;     /* the grades above 0, descending: the ideal ranking's gains */
    long num_ideal;
} ResRels;

/* _ctrec_all_trec.c: bpref (m_bpref.c; gm_bpref's too), and the families -m all_trec adds
 * to the official ones */
double ctrec_bpref(const ResRels *rr, long level);
void ctrec_calc_all_trec(const Family *f, const ResRels *rr, long level, double *v);

#endif

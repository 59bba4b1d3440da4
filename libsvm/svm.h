/* svm.h: what a program may ask of svm. Programs need none of it: under
 * svmrun, ordinary pthreads programs run unmodified. */
#ifndef SVM_SVM_H_
#define SVM_SVM_H_

#ifdef __cplusplus
extern "C" {
#endif

/* This node's number (0 for main's node) and the number of nodes. Outside
 * svm (no libsvm preloaded) these symbols do not exist: declare them weak to
 * probe, as tests/runtime does. */
int svm_node_id(void);
int svm_nodes(void);

/* Marks a phase of the calling thread's run: its time breakdown and counters
 * between begin and end are reported under `name` (svmrun --stats). Phases
 * of one name accumulate; different names may nest. Same weak-probe rule. */
void svm_phase_begin(const char* name);
void svm_phase_end(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* SVM_SVM_H_ */

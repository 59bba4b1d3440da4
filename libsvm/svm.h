/* svm.h: what a program may ask of svm. Programs need none of it: under
 * svmrun, ordinary pthreads programs run unmodified. */
#ifndef SVM_SVM_H_
#define SVM_SVM_H_

/* libsvm is built with hidden visibility: what it exports says so. */
#if defined(__GNUC__)
#define SVM_API __attribute__((visibility("default")))
#else
#define SVM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* This node's number (0 for main's node) and the number of nodes. Outside
 * svm (no libsvm preloaded) these symbols do not exist: declare them weak to
 * probe, as tests/runtime does. */
SVM_API int svm_node_id(void);
SVM_API int svm_nodes(void);

/* Marks a phase of the calling thread's run: its time breakdown and counters
 * between begin and end are reported under `name` (svmrun --stats). Phases
 * of one name accumulate; different names may nest. Same weak-probe rule. */
SVM_API void svm_phase_begin(const char* name);
SVM_API void svm_phase_end(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* SVM_SVM_H_ */

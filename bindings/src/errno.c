#include <rte_errno.h>

/* rte_errno expands to a thread-local lvalue that bindgen cannot express. */
int ironclos_rte_errno(void) { return rte_errno; }

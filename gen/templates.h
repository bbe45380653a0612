/* Kernel templates: the .cu files of templates/, embedded into the binary at build time, or read
 * from a folder instead (--templates DIR) while a template is being worked on. The embedded table
 * also holds cpu/rng.h, which every kernel shares with the CPU reference (see emit.c). */
#ifndef TT_TEMPLATES_H
#define TT_TEMPLATES_H

#include <stddef.h>

typedef struct {
    const char *name; /* file name, e.g. "layernorm.cu" */
    const char *text;
    size_t len;
} tt_template;

extern const tt_template tt_embedded_templates[]; /* ends with a zeroed entry */

/* The text of template `name`: from dir when dir is not NULL, else the embedded copy.
 * *text is malloc'd and NUL-terminated. -1 with a message in err. */
int tt_template_load(const char *dir, const char *name, char **text, size_t *len, char *err,
                     size_t errlen);

#endif

/* Finds a kernel template's text (see templates.h). */
#include "templates.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int tt_template_load(const char *dir, const char *name, char **text, size_t *len, char *err,
                     size_t errlen)
{
    if (dir) {
        char *path = tt_xasprintf("%s/%s", dir, name);
        int rc = tt_read_file(path, 16u << 20, text, len, err, errlen);
        free(path);
        return rc;
    }
    for (const tt_template *t = tt_embedded_templates; t->name; t++) {
        if (strcmp(t->name, name) == 0) {
            *text = tt_xmalloc(t->len + 1);
            memcpy(*text, t->text, t->len);
            (*text)[t->len] = '\0';
            *len = t->len;
            return 0;
        }
    }
    return tt_errf(err, errlen, "no kernel template named %s in this build", name);
}

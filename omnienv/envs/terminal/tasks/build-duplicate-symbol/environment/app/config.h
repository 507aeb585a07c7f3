#ifndef CONFIG_H
#define CONFIG_H

/* settings shared by all modules */
int verbose = 0;
const char *app_name = "inventory";

inline int clamp_qty(int q)
{
    return q < 0 ? 0 : (q > 9999 ? 9999 : q);
}

#endif

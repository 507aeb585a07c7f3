#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        char *end;
        double deg = strtod(line, &end);
        if (end == line) {
            printf("error: bad input\n");
            continue;
        }
        double rad = deg * M_PI / 180.0;
        printf("%.1f %.4f %.4f %.4f\n", deg, sin(rad), cos(rad), hypot(sin(rad), 2.0 * cos(rad)));
    }
    return 0;
}

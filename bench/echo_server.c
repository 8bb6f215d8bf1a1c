/* The round-trip floor for `mcp serve` (issue 49): a minimal MCP-shaped JSON-RPC server
 * over stdio in C. It reads the file named by argv[1] once, at start, and answers every
 * request line with it as a tool result (so each answer carries the same bytes as a
 * read_file answer, JSON-escaped); `initialize` gets a fixed result; notifications
 * (lines without "id") get nothing. No JSON parser: the id is the number after the
 * first "id": of the line, which is all mcp_load sends.
 * Build: cc -O2 -o echo_server bench/echo_server.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *escaped(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap * 6 + 1);
    int c;
    while ((c = fgetc(f)) != EOF && len < cap * 6 - 8) {
        if (c == '"' || c == '\\') { out[len++] = '\\'; out[len++] = (char)c; }
        else if (c == '\n') { out[len++] = '\\'; out[len++] = 'n'; }
        else if (c == '\t') { out[len++] = '\\'; out[len++] = 't'; }
        else if (c < 0x20) len += (size_t)sprintf(out + len, "\\u%04x", c);
        else out[len++] = (char)c;
    }
    out[len] = 0;
    fclose(f);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: echo_server FILE\n"); return 2; }
    char *text = escaped(argv[1]);
    char *line = NULL;
    size_t cap = 0;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    while (getline(&line, &cap, stdin) > 0) {
        char *id = strstr(line, "\"id\":");
        if (!id) continue;
        long n = strtol(id + 5, NULL, 10);
        if (strstr(line, "\"method\":\"initialize\""))
            printf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":\"2025-06-18\","
                   "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"c-echo\",\"version\":\"0\"}}}\n", n);
        else
            printf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}}\n",
                   n, text);
        fflush(stdout);
    }
    return 0;
}

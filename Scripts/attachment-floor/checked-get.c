// The floor of a checked download (Specs/benchmarks.md, "Attachments"): one HTTP/1.1 GET
// over a plain socket, its body written into a file and hashed with SHA-256 (OpenSSL, with
// the CPU's SHA instructions), as fast as C and the kernel allow. No TLS, no HTTP library:
// what no client can beat on this machine.
//
//   cc -O2 -o /tmp/checked-get Scripts/attachment-floor/checked-get.c -lcrypto -lpthread
//   /tmp/checked-get 127.0.0.1 PORT /attachments/SHA OUT-FILE [serial|pipelined]
//
// serial: recv, write and hash one piece after another on one thread (curl, then a hash).
// pipelined: one thread receives and writes, a second hashes each piece as it is written,
// through a ring of pieces (the best two cores can do). Prints seconds, CPU and the digest.
#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { PIECE = 128 << 10, RING = 16 };
static char ring[RING][PIECE];
static size_t lengths[RING];
static long produced, consumed; // pieces; guarded by lock
static int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static EVP_MD_CTX *digest;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void fail(const char *what) { perror(what); exit(1); }
static void put(int fd, const char *bytes, size_t count) {
  while (count > 0) { ssize_t n = write(fd, bytes, count); if (n <= 0) fail("write"); bytes += n; count -= n; }
}

static void *hasher(void *unused) {
  (void)unused;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (consumed == produced && !done) pthread_cond_wait(&changed, &lock);
    if (consumed == produced && done) { pthread_mutex_unlock(&lock); return NULL; }
    long slot = consumed % RING;
    pthread_mutex_unlock(&lock);
    EVP_DigestUpdate(digest, ring[slot], lengths[slot]);
    pthread_mutex_lock(&lock);
    consumed++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
  }
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s HOST PORT PATH OUT [serial|pipelined]\n", argv[0]); return 2; }
  int pipelined = argc > 5 && strcmp(argv[5], "pipelined") == 0;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) { fprintf(stderr, "bad host\n"); return 2; }
  int out = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) fail("open");
  digest = EVP_MD_CTX_new();
  EVP_DigestInit_ex(digest, EVP_sha256(), NULL);
  double start = now();
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(sock, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
  char request[1024];
  int length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", argv[3], argv[1]);
  put(sock, request, length);
  // The head: read until its blank line; what follows it in the same read is body.
  static char head[65536];
  size_t have = 0;
  char *end = NULL;
  while (!end) {
    ssize_t n = recv(sock, head + have, sizeof head - 1 - have, 0);
    if (n <= 0) fail("recv head");
    have += n; head[have] = 0;
    end = strstr(head, "\r\n\r\n");
  }
  if (strncmp(head, "HTTP/1.1 200", 12) != 0) { fprintf(stderr, "status: %.40s\n", head); return 1; }
  size_t first = have - (end + 4 - head);
  pthread_t thread;
  if (pipelined) pthread_create(&thread, NULL, hasher, NULL);
  long long total = 0;
  for (long piece = 0;; piece++) {
    long slot = piece % RING;
    if (pipelined) {
      pthread_mutex_lock(&lock);
      while (produced - consumed >= RING) pthread_cond_wait(&changed, &lock);
      pthread_mutex_unlock(&lock);
    }
    size_t count = 0;
    if (piece == 0 && first > 0) { memcpy(ring[slot], end + 4, first); count = first; }
    else {
      ssize_t n = recv(sock, ring[slot], PIECE, 0);
      if (n < 0) fail("recv");
      if (n == 0) break;
      count = n;
    }
    put(out, ring[slot], count);
    total += count;
    if (pipelined) {
      lengths[slot] = count;
      pthread_mutex_lock(&lock); produced++; pthread_cond_broadcast(&changed); pthread_mutex_unlock(&lock);
    } else {
      EVP_DigestUpdate(digest, ring[slot], count);
    }
  }
  if (pipelined) {
    pthread_mutex_lock(&lock); done = 1; pthread_cond_broadcast(&changed); pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
  }
  unsigned char value[32];
  EVP_DigestFinal_ex(digest, value, NULL);
  double seconds = now() - start;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  printf("{\"mode\":\"%s\",\"bytes\":%lld,\"seconds\":%.3f,\"cpu_seconds\":%.3f,\"sha256\":\"", pipelined ? "pipelined" : "serial", total, seconds, cpu);
  for (int i = 0; i < 32; i++) printf("%02x", value[i]);
  printf("\"}\n");
  close(sock);
  close(out);
  return 0;
}

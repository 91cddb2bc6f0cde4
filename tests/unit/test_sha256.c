/* SHA-256 (common/sha256.h) against FIPS 180-4's examples, across block
 * boundaries fed in pieces, and of a file. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/sha256.h"

static void hex_of(const char *msg, size_t len, size_t piece, char hex[65])
{
    struct sha256 s;
    sha256_init(&s);
    for (size_t at = 0; at < len; at += piece)
        sha256_update(&s, msg + at, len - at < piece ? len - at : piece);
    sha256_final_hex(&s, hex);
}

int main(void)
{
    char hex[65];
    hex_of("", 0, 1, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills */
    for (size_t piece = 1; piece <= 64; piece *= 4) {
        hex_of(two, strlen(two), piece, hex);
        CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    }
    static char million[1000000];
    memset(million, 'a', sizeof million);
    hex_of(million, sizeof million, 4093, hex);
    CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

    char path[] = "/tmp/flashbed-sha256-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "abc", 3) == 3);
    close(fd);
    char err[256];
    CHECK(sha256_file_hex(path, hex, err, sizeof err) == 0);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    CHECK(sha256_file_hex(path, hex, err, sizeof err) == -1 && strstr(err, "cannot open") != NULL);
    return check_report("test_sha256");
}

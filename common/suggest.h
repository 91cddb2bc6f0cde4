/* "Did you mean ...?": the word a typo most likely meant, among the words
 * a command knows (its options, its subcommands, the commands).
 *
 * The distance is the optimal string alignment distance (Levenshtein with
 * adjacent transpositions, each edit costing 1): "--dram-buget" is 1 from
 * "--dram-budget", "rnu" 1 from "run". A candidate is suggested when it
 * lies within a third of the typed word's length (at least 1, at most 3
 * edits), or, failing that, when it is the one candidate that contains the
 * typed word (of 3 characters or more: "budget" names "dram-budget").
 *
 * A library: pure functions, no output, no allocation beyond the stack;
 * safe from any thread. */
#ifndef FLASHBED_COMMON_SUGGEST_H
#define FLASHBED_COMMON_SUGGEST_H

#include <stddef.h>

/* Longest word compared; longer words are never within reach. */
enum { SUGGEST_MAX_LEN = 63 };

/* Edits (insert, delete, substitute, swap two neighbours) from a to b;
 * SIZE_MAX when either is longer than SUGGEST_MAX_LEN. */
size_t edit_distance(const char *a, const char *b);

/* The candidate (one of n, NULLs skipped) nearest `word` as above, the
 * first of equals; NULL when none is near enough or word is one of them. */
const char *suggest_nearest(const char *word, const char *const *candidates, size_t n);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test — a minimal unit-test harness: TEST(name) defines a case, CHECK*
 * record failures without stopping the case, main() from TEST_MAIN runs all
 * cases and prints "N passed, N failed".  One test binary per module.
 */
#ifndef FG_TEST_H
#define FG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

extern int test_failed_checks;
extern struct test_case test_cases[];
extern unsigned test_n_cases;

#define TEST(fn_name)                                                               \
	static void fn_name(void);                                                  \
	__attribute__((constructor)) static void register_##fn_name(void)           \
	{                                                                           \
		test_cases[test_n_cases++] = (struct test_case){ #fn_name, fn_name }; \
	}                                                                           \
	static void fn_name(void)

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			test_failed_checks++;                                        \
		}                                                                    \
	} while (0)

#define CHECK_EQ(a, b)                                                               \
	do {                                                                         \
		long long va_ = (long long)(a), vb_ = (long long)(b);                \
		if (va_ != vb_) {                                                    \
			fprintf(stderr, "  %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, \
				#a, #b, va_, vb_);                                   \
			test_failed_checks++;                                        \
		}                                                                    \
	} while (0)

#define CHECK_STR(a, b)                                                              \
	do {                                                                         \
		const char *sa_ = (a), *sb_ = (b);                                   \
		if (!sa_ || !sb_ || strcmp(sa_, sb_)) {                              \
			fprintf(stderr, "  %s:%d: %s == \"%s\" failed: got \"%s\"\n", __FILE__, __LINE__, \
				#a, sb_ ? sb_ : "(null)", sa_ ? sa_ : "(null)");     \
			test_failed_checks++;                                        \
		}                                                                    \
	} while (0)

#define TEST_MAIN                                                                    \
	int test_failed_checks;                                                      \
	struct test_case test_cases[512];                                            \
	unsigned test_n_cases;                                                       \
	int main(void)                                                               \
	{                                                                            \
		unsigned passed = 0, failed = 0;                                     \
		for (unsigned i = 0; i < test_n_cases; i++) {                        \
			int before = test_failed_checks;                             \
			test_cases[i].fn();                                          \
			if (test_failed_checks == before) {                          \
				passed++;                                            \
				printf("ok   %s\n", test_cases[i].name);             \
			} else {                                                     \
				failed++;                                            \
				printf("FAIL %s\n", test_cases[i].name);             \
			}                                                            \
		}                                                                    \
		printf("%u passed, %u failed\n", passed, failed);                    \
		return failed ? 1 : 0;                                               \
	}

#endif

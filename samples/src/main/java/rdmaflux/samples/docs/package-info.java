/**
 * The code the documentation shows: every Java block of README.md and docs/ is a tagged region of a
 * file in this package (see {@link rdmaflux.samples.docs.DocSnippets}), compiled by the build and run
 * against real RDMA by {@code DocSnippetsIT}.
 */
package rdmaflux.samples.docs;

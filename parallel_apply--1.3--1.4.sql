/* parallel_apply--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.4'" to load this file. \quit

-- 1.4: the security model (docs/subscriber.md, "Security model").

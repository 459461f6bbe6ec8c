/* parallel_apply--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.6'" to load this file. \quit

-- 1.6: the security release (issue 42).

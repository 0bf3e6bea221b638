package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Sizes of the data fillPlanData writes: a few thousand rows per table, so
// that the planner's choices are those of a used installation, not of an
// empty one (where a full scan and a sort are as good as anything).
const (
	planUsers  = 300
	planEnvs   = 40
	planRows   = 4000 // agents, runs, jobs, credentials, notifications, messages, usage events, sessions
	planHotID  = 2    // the user most rows are about (the lists' user)
	planPeerID = 3    // whom planHotID writes to most
)

// fillPlanData writes realistic rows into every table a list reads, in one
// transaction, then lets SQLite gather its statistics the way Open does.
func fillPlanData(t testing.TB, db *DB) { fillData(t, db, planRows) }

// fillData is fillPlanData with rows rows in each of the large tables:
// fewer serve the tests that need every table filled but no planner
// statistics (the copy between engines).
func fillData(t testing.TB, db *DB, rows int) {
	t.Helper()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	at := func(i int) string {
		return fmtTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Minute))
	}
	err := db.tx(ctx, func(tx *sql.Tx) error {
		exec := func(query string, n int, args func(i int) []any) error {
			st, err := tx.PrepareContext(ctx, query)
			if err != nil {
				return err
			}
			defer st.Close()
			for i := 1; i <= n; i++ {
				if _, err := st.ExecContext(ctx, args(i)...); err != nil {
					return fmt.Errorf("%s: row %d: %w", strings.Fields(query)[2], i, err)
				}
			}
			return nil
		}
		roles := []string{"viewer", "viewer", "editor", "editor", "editor", "admin"}
		steps := []func() error{
			func() error {
				return exec(`INSERT INTO environments (id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`, planEnvs,
					func(i int) []any {
						return []any{i, fmt.Sprintf("Site %c%d", 'A'+rune(i%26), i), fmt.Sprintf("site-%d", i), at(i), at(i)}
					})
			},
			func() error {
				return exec(`INSERT INTO users (id, email, username, full_name, password_hash, role, is_active, created_at, updated_at)
					VALUES (?, ?, ?, ?, 'x', ?, ?, ?, ?)`, planUsers, func(i int) []any {
					role := roles[rnd.IntN(len(roles))]
					if i == 1 {
						role = "super_admin"
					}
					return []any{i, fmt.Sprintf("u%d@example.com", i), fmt.Sprintf("user%d", i), fmt.Sprintf("User %d", i), role,
						boolInt(i <= 3 || rnd.IntN(10) > 0), at(i), at(i)}
				})
			},
			func() error {
				return exec(`INSERT OR IGNORE INTO user_environments (user_id, environment_id) VALUES (?, ?)`, planUsers*3,
					func(i int) []any { return []any{(i-1)/3 + 1, 1 + (i*7+rnd.IntN(3))%planEnvs} })
			},
			func() error {
				providers := []string{"openai", "anthropic", "openai_compatible", "wordpress", "serp"}
				return exec(`INSERT INTO credentials (name, provider, secret, secret_hint, environment_id, created_at, updated_at)
					VALUES (?, ?, x'00', '…', ?, ?, ?)`, rows, func(i int) []any {
					return []any{fmt.Sprintf("Key %d", rnd.IntN(1e6)), providers[rnd.IntN(len(providers))], planEnv(rnd), at(i), at(i)}
				})
			},
			func() error {
				kinds := []string{"writer", "editor", "researcher", "seo"}
				return exec(`INSERT INTO agents (name, description, kind, system_prompt, is_active, environment_id, created_by, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
					return []any{fmt.Sprintf("%c agent %d", 'a'+rune(rnd.IntN(26)), i), "writes things", kinds[rnd.IntN(len(kinds))],
						"You are helpful.", boolInt(rnd.IntN(10) > 0), planEnv(rnd), 1 + rnd.IntN(planUsers), at(i), at(i)}
				})
			},
			func() error {
				return exec(`INSERT INTO archetypes (name, prompt_template, target_words, environment_id, created_at, updated_at)
					VALUES (?, 'About {{keyword}}', 1200, ?, ?, ?)`, rows, func(i int) []any {
					return []any{fmt.Sprintf("archetype %d", i), planEnv(rnd), at(i), at(i)}
				})
			},
			func() error {
				return exec(`INSERT OR IGNORE INTO agent_assignments (agent_id, environment_id) VALUES (?, ?)`, rows/2,
					func(int) []any { return []any{1 + rnd.IntN(rows), 1 + rnd.IntN(planEnvs)} })
			},
			func() error {
				kinds := []string{"agent.run", "agent.run", "agent.run", "backup", "notify"}
				statuses := []string{"succeeded", "succeeded", "succeeded", "failed", "cancelled", "queued", "running"}
				return exec(`INSERT INTO jobs (kind, status, run_after, created_at, updated_at, finished_at) VALUES (?, ?, ?, ?, ?, ?)`,
					rows, func(i int) []any {
						return []any{kinds[rnd.IntN(len(kinds))], statuses[rnd.IntN(len(statuses))], at(i), at(i), at(i), at(i + 1)}
					})
			},
			func() error {
				statuses := []string{"succeeded", "succeeded", "succeeded", "failed", "cancelled", "queued", "running"}
				return exec(`INSERT INTO agent_runs (agent_id, environment_id, user_id, input, status, queued_at) VALUES (?, ?, ?, 'go', ?, ?)`,
					rows, func(i int) []any {
						return []any{1 + rnd.IntN(rows), planEnv(rnd), planUser(rnd), statuses[rnd.IntN(len(statuses))], at(i)}
					})
			},
			func() error {
				return exec(`INSERT INTO notifications (user_id, kind, title, environment_id, read_at, created_at) VALUES (?, 'run.succeeded', 'Done', ?, ?, ?)`,
					rows, func(i int) []any {
						var read any
						if rnd.IntN(3) > 0 {
							read = at(i + 5)
						}
						return []any{planUser(rnd), planEnv(rnd), read, at(i)}
					})
			},
			func() error {
				return exec(`INSERT INTO messages (sender_id, recipient_id, pair_lo, pair_hi, body, read_at, sender_deleted_at, recipient_deleted_at, created_at)
					VALUES (?1, ?2, ?7, ?8, 'hello', ?3, ?4, ?5, ?6)`, rows, func(i int) []any {
					from, to := planUser(rnd), planUser(rnd)
					if rnd.IntN(4) == 0 {
						from, to = planHotID, planPeerID
					}
					if from == to {
						to = from%planUsers + 1
					}
					var read, sdel, rdel any
					if rnd.IntN(2) == 0 {
						read = at(i + 1)
					}
					if rnd.IntN(10) == 0 {
						sdel = at(i + 2)
					}
					if rnd.IntN(10) == 0 {
						rdel = at(i + 2)
					}
					return []any{from, to, read, sdel, rdel, at(i), min(from, to), max(from, to)}
				})
			},
			func() error {
				return exec(`INSERT INTO sessions (user_id, created_at, last_seen_at, token_expires_at, expires_at, revoked_at)
					VALUES (?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
					var revoked any
					if rnd.IntN(3) == 0 {
						revoked = at(i + 1)
					}
					return []any{planUser(rnd), at(i), at(i), at(i + 2), at(i + 1000), revoked}
				})
			},
			func() error {
				err := exec(`INSERT INTO api_tokens (user_id, name, prefix, secret_hash, limited, created_at, revoked_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
					var revoked any
					if rnd.IntN(3) == 0 {
						revoked = at(i + 1)
					}
					h := sha256.Sum256([]byte(fmt.Sprint("token ", i)))
					return []any{planUser(rnd), fmt.Sprint("token ", i), fmt.Sprintf("cdk_%08d", i), h[:], i % 2, at(i), revoked}
				})
				if err != nil {
					return err
				}
				return exec(`INSERT INTO api_token_environments (token_id, environment_id) VALUES (?, ?)`, rows/2, func(i int) []any {
					return []any{2*i - 1, 1 + i%planEnvs} // the limited tokens, odd ids
				})
			},
			func() error {
				models := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet", "claude-haiku"}
				sources := []string{"execution", "execution", "chat", "live", "scout", "autopilot", "test"}
				return exec(`INSERT INTO usage_events (created_at, provider, model, input_tokens, output_tokens, cost_micros, status, source,
					user_id, environment_id, agent_id) VALUES (?, 'openai', ?, 100, 200, 10000, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
					status := "ok"
					if rnd.IntN(20) == 0 {
						status = "error"
					}
					return []any{at(i), models[rnd.IntN(len(models))], status, sources[rnd.IntN(len(sources))], planUser(rnd), planEnv(rnd),
						1 + rnd.IntN(rows)}
				})
			},
		}
		steps = append(steps, func() error {
			return exec(`INSERT INTO cms_categories (environment_id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`, rows,
				func(i int) []any {
					return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("%c news %d", 'a'+rune(rnd.IntN(26)), i), fmt.Sprintf("news-%d", i), at(i), at(i)}
				})
		}, func() error {
			return exec(`INSERT INTO cms_tags (environment_id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`, rows,
				func(i int) []any {
					return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("%c go %d", 'a'+rune(rnd.IntN(26)), i), fmt.Sprintf("go-%d", i), at(i), at(i)}
				})
		})
		steps = append(steps, func() error {
			statuses := []string{"draft", "draft", "publish", "publish", "publish", "pending", "future", "private"}
			syncs := []string{"local", "synced", "synced", "synced", "dirty", "failed"}
			return exec(`INSERT INTO wordpress_posts (environment_id, title, slug, status, sync_status, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("Post %d", i), fmt.Sprintf("post-%d", i), statuses[rnd.IntN(len(statuses))],
					syncs[rnd.IntN(len(syncs))], at(i), at(i)}
			})
		}, func() error {
			return exec(`INSERT OR IGNORE INTO wordpress_post_categories (post_id, category_id) VALUES (?, ?)`, rows*2,
				func(int) []any { return []any{1 + rnd.IntN(rows), 1 + rnd.IntN(rows)} })
		}, func() error {
			return exec(`INSERT OR IGNORE INTO wordpress_post_tags (post_id, tag_id) VALUES (?, ?)`, rows*3,
				func(int) []any { return []any{1 + rnd.IntN(rows), 1 + rnd.IntN(rows)} })
		}, func() error {
			return exec(`INSERT INTO astro_posts (environment_id, title, slug, pub_date, draft, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				rows, func(i int) []any {
					return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("Post %d about news", i), fmt.Sprintf("post-%d", i), at(rnd.IntN(rows)),
						boolInt(rnd.IntN(5) == 0), at(i), at(i)}
				})
		}, func() error {
			return exec(`INSERT OR IGNORE INTO astro_post_categories (post_id, category_id) VALUES (?, ?)`, rows*2,
				func(i int) []any { return []any{1 + rnd.IntN(rows), 1 + rnd.IntN(rows)} })
		}, func() error {
			return exec(`INSERT OR IGNORE INTO astro_post_tags (post_id, tag_id) VALUES (?, ?)`, rows*2,
				func(i int) []any { return []any{1 + rnd.IntN(rows), 1 + rnd.IntN(rows)} })
		})
		steps = append(steps, func() error {
			words := []string{"sourdough", "compost", "pricing", "headline", "keyword", "outline"}
			return exec(`INSERT INTO chat_conversations (user_id, environment_id, title, archived, pinned, activity_at, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
				return []any{planUser(rnd), planEnv(rnd), fmt.Sprintf("About %s %d", words[rnd.IntN(len(words))], i),
					boolInt(rnd.IntN(8) == 0), boolInt(rnd.IntN(10) == 0), at(i + rnd.IntN(50)), at(i), at(i)}
			})
		}, func() error {
			// Exchanges: a user message, then its reply.
			words := []string{"bread", "garden", "prices", "titles", "search", "sections", "sourdough"}
			return exec(`INSERT INTO chat_messages (conversation_id, parent_id, role, content, status, created_at)
				VALUES (?, CASE WHEN ?2 % 2 = 0 THEN ?2 - 1 END, CASE WHEN ?2 % 2 = 1 THEN 'user' ELSE 'assistant' END, ?, 'complete', ?)`,
				rows*4, func(i int) []any {
					return []any{1 + (i-1)/8, i, fmt.Sprintf("a message on %s, number %d", words[rnd.IntN(len(words))], i), at(i)}
				})
		}, func() error {
			return exec(`INSERT INTO live_sessions (environment_id, agent_id, title, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
				rows, func(i int) []any {
					status := "open"
					if rnd.IntN(3) > 0 {
						status = "closed"
					}
					return []any{1 + rnd.IntN(planEnvs), 1 + rnd.IntN(rows), fmt.Sprintf("Session %d", i), status, at(i), at(i)}
				})
		}, func() error {
			// Finished generations only: one session has at most one
			// under way (live_generations_one_active).
			statuses := []string{"succeeded", "succeeded", "succeeded", "failed", "cancelled"}
			return exec(`INSERT INTO live_generations (session_id, user_id, prompt, status, output, queued_at) VALUES (?, ?, 'go', ?, 'text', ?)`,
				rows*2, func(i int) []any {
					session := 1 + rnd.IntN(rows)
					if rnd.IntN(10) == 0 {
						session = planHotID
					}
					return []any{session, planUser(rnd), statuses[rnd.IntN(len(statuses))], at(i)}
				})
		}, func() error {
			statuses := []string{"draft", "active", "active", "paused", "completed"}
			return exec(`INSERT INTO seo_campaigns (environment_id, name, agent_id, archetype_id, target, status, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, rows/4, func(i int) []any {
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("%c campaign %d", 'a'+rune(rnd.IntN(26)), i), 1 + rnd.IntN(rows),
					1 + rnd.IntN(rows), []string{"wordpress", "astro"}[rnd.IntN(2)], statuses[rnd.IntN(len(statuses))], at(i), at(i + rnd.IntN(50))}
			})
		}, func() error {
			statuses := []string{"new", "new", "new", "planned", "in_progress", "published", "ignored"}
			clusters := []string{"", "", "pricing", "how to", "reviews", "alternatives"}
			return exec(`INSERT INTO seo_keywords (environment_id, keyword, keyword_key, search_volume, difficulty, cpc, intent, status,
				cluster, campaign_id, campaign_position, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rows*3,
				func(i int) []any {
					var campaign, pos any
					if rnd.IntN(4) == 0 {
						campaign, pos = 1+rnd.IntN(rows/4), i
					}
					kw := fmt.Sprintf("keyword %d", i)
					return []any{1 + rnd.IntN(planEnvs), kw, kw, rnd.IntN(100000), rnd.IntN(101), float64(rnd.IntN(500)) / 100, rnd.IntN(16),
						statuses[rnd.IntN(len(statuses))], clusters[rnd.IntN(len(clusters))], campaign, pos, at(i), at(i + rnd.IntN(50))}
				})
		}, func() error {
			return exec(`INSERT INTO search_phrases (environment_id, phrase, phrase_key, locale, is_active, refresh_interval, next_run_at,
				last_run_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
				var ran, next any
				if rnd.IntN(3) > 0 {
					ran = at(rnd.IntN(rows))
				}
				active, interval := rnd.IntN(4) > 0, 0
				if rnd.IntN(4) == 0 { // a quarter watched, weekly
					interval = 604800
					if active {
						next = at(i + 24)
					}
				}
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("best %c shoes %d", 'a'+rune(rnd.IntN(26)), i),
					fmt.Sprintf("best %c shoes %d", 'a'+rune(rnd.IntN(26)), i), "en", boolInt(active), interval, next, ran, at(i), at(i)}
			})
		}, func() error {
			kinds := []string{"related", "question", "autocomplete"}
			return exec(`INSERT OR IGNORE INTO search_ideas (phrase_id, environment_id, idea, idea_key, source, kind, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, rows*3, func(i int) []any {
				phrase := 1 + rnd.IntN(rows)
				if rnd.IntN(5) == 0 {
					phrase = planHotID
				}
				idea := fmt.Sprintf("idea %d", rnd.IntN(rows))
				return []any{phrase, 1 + rnd.IntN(planEnvs), idea, idea, []string{"serp", "ai"}[rnd.IntN(2)], kinds[rnd.IntN(3)], at(i)}
			})
		}, func() error {
			kinds := []string{"rss", "rss", "atom", "page"}
			return exec(`INSERT INTO web_sources (environment_id, url, kind, is_active, fetch_interval, next_fetch_at, last_fetched_at,
				consecutive_failures, created_at, updated_at) VALUES (?, ?, ?, ?, 3600, ?, ?, ?, ?, ?)`, rows, func(i int) []any {
				var fetched any
				failures := 0
				if rnd.IntN(4) > 0 {
					fetched = at(rnd.IntN(rows))
					if rnd.IntN(10) == 0 { // a few sites fail, some for long
						failures = 1 + rnd.IntN(40)
					}
				}
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("https://site%d.example/feed", i), kinds[rnd.IntN(len(kinds))],
					boolInt(rnd.IntN(4) > 0), at(i + 24), fetched, failures, at(i), at(i)}
			})
		}, func() error {
			return exec(`INSERT OR IGNORE INTO web_items (source_id, environment_id, item_key, link, title, published_at, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, rows*3, func(i int) []any {
				src := 1 + rnd.IntN(rows)
				if rnd.IntN(5) == 0 {
					src = planHotID
				}
				var published any
				if rnd.IntN(6) > 0 {
					published = at(rnd.IntN(rows))
				}
				link := fmt.Sprintf("https://site.example/post/%d", i)
				return []any{src, 1 + rnd.IntN(planEnvs), link, link, fmt.Sprintf("Post %d", i), published, at(i)}
			})
		}, func() error {
			// Webhooks, a few per environment, and their deliveries: most
			// succeeded, some waiting, with the hot webhook's many.
			return exec(`INSERT INTO webhooks (environment_id, url, events, secret_sealed, secret_prefix, created_at, updated_at)
				VALUES (?, ?, '["post.published"]', x'00', 'whsec_abcd', ?, ?)`, planEnvs*3, func(i int) []any {
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("https://hooks%d.example/in", i), at(i), at(i)}
			})
		}, func() error {
			return exec(`INSERT INTO webhook_deliveries (webhook_id, environment_id, msg_id, event_type, payload, status, attempts,
				next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, 'post.published', '{}', ?, 1, ?, ?, ?)`, rows, func(i int) []any {
				hook := 1 + rnd.IntN(planEnvs*3)
				if rnd.IntN(5) == 0 {
					hook = planHotID
				}
				status, next := "succeeded", any(nil)
				if rnd.IntN(20) == 0 {
					status, next = "pending", at(i+10)
				}
				return []any{hook, 1 + rnd.IntN(planEnvs), fmt.Sprintf("msg_%d", i), status, next, at(i), at(i)}
			})
		}, func() error {
			return exec(`INSERT INTO webhook_attempts (delivery_id, started_at, finished_at, status_code, duration_ms)
				VALUES (?, ?, ?, 200, 12)`, rows, func(i int) []any {
				return []any{1 + i%rows, at(i), at(i)}
			})
		}, func() error {
			// Autopilot runs: finished ones, and one under way in each
			// environment (the most there may be).
			statuses := []string{"succeeded", "succeeded", "succeeded", "failed", "cancelled"}
			return exec(`INSERT INTO autopilot_runs (environment_id, trigger, status, campaign_id, keyword_id, keyword, keyword_status, target,
				post_status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'new', 'wordpress', 'publish', ?)`, rows, func(i int) []any {
				env, status := 1+rnd.IntN(planEnvs), statuses[rnd.IntN(len(statuses))]
				if i <= planEnvs {
					env, status = i, "running"
				}
				return []any{env, []string{"schedule", "manual"}[rnd.IntN(2)], status, 1 + rnd.IntN(rows/4), 1 + rnd.IntN(rows*3),
					fmt.Sprintf("keyword %d", i), at(i)}
			})
		}, func() error {
			return exec(`INSERT OR IGNORE INTO autopilot_steps (run_id, step, status, started_at, finished_at) VALUES (?, ?, 'succeeded', ?, ?)`,
				rows*3, func(i int) []any {
					return []any{1 + (i-1)/3, []string{"pick_keyword", "generate", "create_post"}[(i-1)%3], at(i), at(i + 1)}
				})
		})
		steps = append(steps, func() error {
			statuses := []string{"succeeded", "succeeded", "succeeded", "failed", "queued", "running"}
			return exec(`INSERT INTO seo_scout_runs (environment_id, status, candidate_count, created_at) VALUES (?, ?, ?, ?)`, rows,
				func(i int) []any {
					return []any{1 + rnd.IntN(planEnvs), statuses[rnd.IntN(len(statuses))], rnd.IntN(500), at(i)}
				})
		}, func() error {
			statuses := []string{"ready", "ready", "ready", "failed", "queued"}
			return exec(`INSERT INTO seo_strategies (environment_id, name, method, min_shared, similarity, status, created_at, updated_at)
				VALUES (?, ?, 'auto', 3, 0.5, ?, ?, ?)`, rows, func(i int) []any {
				return []any{1 + rnd.IntN(planEnvs), fmt.Sprintf("%c strategy %d", 'a'+rune(rnd.IntN(26)), i), statuses[rnd.IntN(len(statuses))],
					at(i), at(i + rnd.IntN(50))}
			})
		})
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
}

// planEnv is an environment, or nil (global) for one row in ten.
func planEnv(rnd *rand.Rand) any {
	if rnd.IntN(10) == 0 {
		return nil
	}
	return 1 + rnd.IntN(planEnvs)
}

// planUser is a user, planHotID for one row in five.
func planUser(rnd *rand.Rand) int {
	if rnd.IntN(5) == 0 {
		return planHotID
	}
	return 1 + rnd.IntN(planUsers)
}

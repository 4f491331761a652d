import { and, eq, isNull, lt, gt, or } from 'drizzle-orm';
import { messengerBindings, messengerLinkCodes, messengerUpdates } from '../../../drizzle/messenger.js';
import { users } from '../../../drizzle/users.js';
import type { DbOrTx } from '../../db/index.js';

export type Binding = typeof messengerBindings.$inferSelect;
export type BindingWithWallet = Binding & { walletAddress: string; chain: string };

/**
 * Claims an update_id. Only the caller that inserts the row processes the
 * update; a concurrent insert of the same id waits for the first transaction
 * and then does nothing, so retries and a second instance skip it.
 */
export async function claimUpdate(db: DbOrTx, updateId: bigint, now: Date): Promise<boolean> {
  const rows = await db
    .insert(messengerUpdates)
    .values({ updateId, receivedAt: now })
    .onConflictDoNothing()
    .returning({ updateId: messengerUpdates.updateId });
  return rows.length === 1;
}

/** Cheap pre-check for retries (no transaction); claimUpdate stays the arbiter under races. */
export async function isUpdateSeen(db: DbOrTx, updateId: bigint): Promise<boolean> {
  const rows = await db
    .select({ updateId: messengerUpdates.updateId })
    .from(messengerUpdates)
    .where(eq(messengerUpdates.updateId, updateId));
  return rows.length > 0;
}

export async function pruneUpdates(db: DbOrTx, before: Date): Promise<void> {
  await db.delete(messengerUpdates).where(lt(messengerUpdates.receivedAt, before));
}

/** Drops used codes and codes past their expiry before `before`. */
export async function pruneLinkCodes(db: DbOrTx, before: Date): Promise<void> {
  await db.delete(messengerLinkCodes).where(or(lt(messengerLinkCodes.expiresAt, before), lt(messengerLinkCodes.usedAt, before)));
}

/** One live code per user: issuing a new one retires the earlier ones. */
export async function replaceLinkCode(db: DbOrTx, input: { codeHash: string; userId: string; expiresAt: Date; now: Date }) {
  await db.transaction(async (tx) => {
    await tx.delete(messengerLinkCodes).where(eq(messengerLinkCodes.userId, input.userId));
    await tx
      .insert(messengerLinkCodes)
      .values({ codeHash: input.codeHash, userId: input.userId, expiresAt: input.expiresAt, createdAt: input.now });
  });
}

/** Atomic single use: of two concurrent consumers exactly one gets the user id. */
export async function consumeLinkCode(db: DbOrTx, codeHash: string, now: Date): Promise<string | undefined> {
  const rows = await db
    .update(messengerLinkCodes)
    .set({ usedAt: now })
    .where(and(eq(messengerLinkCodes.codeHash, codeHash), isNull(messengerLinkCodes.usedAt), gt(messengerLinkCodes.expiresAt, now)))
    .returning({ userId: messengerLinkCodes.userId });
  return rows[0]?.userId;
}

/**
 * Binds messengerId ↔ userId, replacing any earlier binding of either side.
 * Call inside a transaction so both deletes and the insert commit together.
 */
export async function replaceBinding(db: DbOrTx, input: { messengerId: bigint; userId: string; chatId: bigint; now: Date }) {
  await db
    .delete(messengerBindings)
    .where(or(eq(messengerBindings.userId, input.userId), eq(messengerBindings.messengerId, input.messengerId)));
  const values = {
    messengerId: input.messengerId,
    userId: input.userId,
    chatId: input.chatId,
    walletType: 'connected',
    connectedAt: input.now,
    lastCommandAt: input.now,
  };
  // A concurrent link of the same Telegram user may have inserted meanwhile: last one wins.
  await db
    .insert(messengerBindings)
    .values(values)
    .onConflictDoUpdate({
      target: messengerBindings.messengerId,
      set: {
        userId: values.userId,
        chatId: values.chatId,
        walletType: values.walletType,
        connectedAt: values.connectedAt,
        lastCommandAt: values.lastCommandAt,
      },
    });
}

const bindingWithWallet = {
  messengerId: messengerBindings.messengerId,
  userId: messengerBindings.userId,
  chatId: messengerBindings.chatId,
  walletType: messengerBindings.walletType,
  connectedAt: messengerBindings.connectedAt,
  lastCommandAt: messengerBindings.lastCommandAt,
  walletAddress: users.walletAddress,
  chain: users.chain,
};

/** Marks a command and returns the binding (with the account's wallet), if any. */
export async function touchBinding(db: DbOrTx, messengerId: bigint, now: Date): Promise<BindingWithWallet | undefined> {
  await db.update(messengerBindings).set({ lastCommandAt: now }).where(eq(messengerBindings.messengerId, messengerId));
  const rows = await db
    .select(bindingWithWallet)
    .from(messengerBindings)
    .innerJoin(users, eq(users.id, messengerBindings.userId))
    .where(eq(messengerBindings.messengerId, messengerId));
  return rows[0];
}

export async function findBindingByUser(db: DbOrTx, userId: string): Promise<Binding | undefined> {
  const rows = await db.select().from(messengerBindings).where(eq(messengerBindings.userId, userId));
  return rows[0];
}

export async function findWallet(db: DbOrTx, userId: string): Promise<{ walletAddress: string; chain: string } | undefined> {
  const rows = await db.select({ walletAddress: users.walletAddress, chain: users.chain }).from(users).where(eq(users.id, userId));
  return rows[0];
}

export async function deleteBindingByMessengerId(db: DbOrTx, messengerId: bigint): Promise<boolean> {
  const rows = await db
    .delete(messengerBindings)
    .where(eq(messengerBindings.messengerId, messengerId))
    .returning({ userId: messengerBindings.userId });
  return rows.length > 0;
}

export async function deleteBindingByUser(db: DbOrTx, userId: string): Promise<Binding | undefined> {
  const rows = await db.delete(messengerBindings).where(eq(messengerBindings.userId, userId)).returning();
  return rows[0];
}

/** Unbinds only if the binding still points at that chat (a relink meanwhile survives). */
export async function deleteBindingIfChat(db: DbOrTx, userId: string, chatId: bigint): Promise<boolean> {
  const rows = await db
    .delete(messengerBindings)
    .where(and(eq(messengerBindings.userId, userId), eq(messengerBindings.chatId, chatId)))
    .returning({ userId: messengerBindings.userId });
  return rows.length > 0;
}

/** docs/decisions.md §13.3: the chat became a supergroup; the binding follows it (only if it still points at the old chat). */
export async function moveBindingChat(db: DbOrTx, userId: string, from: bigint, to: bigint): Promise<boolean> {
  const rows = await db
    .update(messengerBindings)
    .set({ chatId: to })
    .where(and(eq(messengerBindings.userId, userId), eq(messengerBindings.chatId, from)))
    .returning({ userId: messengerBindings.userId });
  return rows.length > 0;
}

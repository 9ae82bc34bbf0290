import type { TSchema } from '@sinclair/typebox'
import { Alert, AlertList } from './alerts.js'
import { QueuedStatus } from './common.js'
import { Media } from './media.js'
import { Comment, CommentList, CommentPatch, CommentWrite } from './comments.js'
import { Post, PostCreate, PostList, PostPatch, PostUpdate, UserSummary } from './posts.js'
import { PostCursorPage } from './posts-v2.js'
import { Review, ReviewCreate, ReviewList, ReviewPatch } from './reviews.js'
import { Problem } from './problems.js'
import { Health, Version } from './operations.js'
import { TokenForm, TokenRequest, TokenResponse } from './auth.js'
import { MyProfile, Profile, ProfileCreate, ProfilePatch, ProfileUpdate } from './profiles.js'
import { EmailVerification } from './user-email.js'
import { AccountDeletion, EmailChange, PasswordChange, PasswordResetConfirmation, PasswordResetRequest } from './account.js'
import { Product, ProductList, ProductPatch, ProductWrite, Shop, ShopList, ShopPatch, ShopWrite } from './shops.js'
import { Class, ClassCreate, ClassList, ClassPatch, Student, StudentCreate, StudentList, StudentPatch } from './classes.js'
import { Chapter, ChapterCreate, ChapterList, ChapterPatch, Course, Lesson, LessonCreate, LessonList, LessonPatch } from './courses.js'

/** Every named component schema; the app adds them once, and OpenAPI names them by $id. */
export const components: TSchema[] = [
  Problem,
  QueuedStatus,
  Health,
  Version,
  TokenRequest, TokenForm, TokenResponse,
  ProfileCreate, ProfileUpdate, ProfilePatch, Profile, MyProfile, EmailVerification,
  PasswordChange, PasswordResetRequest, PasswordResetConfirmation, EmailChange, AccountDeletion,
  Shop, ShopWrite, ShopPatch, ShopList, Product, ProductWrite, ProductPatch, ProductList,
  Class, ClassCreate, ClassPatch, ClassList, Student, StudentCreate, StudentPatch, StudentList,
  Course, Chapter, ChapterCreate, ChapterPatch, ChapterList, Lesson, LessonCreate, LessonPatch, LessonList,
  Alert, AlertList,
  Media,
  UserSummary, Post, PostCreate, PostUpdate, PostPatch, PostList,
  PostCursorPage,
  Review, ReviewCreate, ReviewPatch, ReviewList,
  Comment, CommentWrite, CommentPatch, CommentList
]
